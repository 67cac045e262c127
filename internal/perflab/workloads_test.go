package perflab

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

// The side-by-side harness's hand-written baselines, on its own key table.
const handDDL = `
CREATE TABLE sbs_keys(key uuid PRIMARY KEY, phase text NOT NULL, recovery_point text,
  locked_until timestamptz, response jsonb, created_at timestamptz NOT NULL DEFAULT now());
` + ordersDDL + `;
INSERT INTO sbs_keys(key, phase, recovery_point, response) SELECT gen_random_uuid(), 'finished', 'recorded', '{"ok":true}'
  FROM generate_series(1, 20000);
` + prefillOrders

// handIdem is idempotency written by hand in one pgx transaction: key, effect, response.
func handIdem() variant {
	return variant{name: "hand-1tx-idem", setup: exec(handDDL), op: func(ctx context.Context, p *pgxpool.Pool, i int) error {
		return pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
			k := uuid.New()
			tag, err := tx.Exec(ctx, `INSERT INTO sbs_keys(key, phase) VALUES ($1, 'started') ON CONFLICT DO NOTHING`, k)
			if err != nil || tag.RowsAffected() == 0 {
				return err
			}
			var id int64
			if err := tx.QueryRow(ctx, `INSERT INTO sbs_orders(ref, amount) VALUES ($1, 100) RETURNING id`, fmt.Sprint(i)).Scan(&id); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE sbs_keys SET phase='finished', response=jsonb_build_object('id', $2::bigint) WHERE key=$1`, k, id)
			return err
		})
	}}
}

// floor2rt is a hand-written two-phase key: claim (started), a no-op call, finish.
func floor2rt() variant {
	return variant{name: "floor-2rt", setup: exec(handDDL), op: func(ctx context.Context, p *pgxpool.Pool, i int) error {
		k := uuid.New()
		var phase string
		if err := p.QueryRow(ctx, `INSERT INTO sbs_keys(key, phase, recovery_point, locked_until) VALUES ($1,'started','created', now()+interval '30 s')
			ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key RETURNING phase`, k).Scan(&phase); err != nil {
			return err
		}
		_, err := p.Exec(ctx, `UPDATE sbs_keys SET phase='finished', recovery_point='recorded', response='{"ok":true}', locked_until=NULL WHERE key=$1 AND phase='started'`, k)
		return err
	}}
}

// engineVariant runs op through saga.Client.Run on a migrated database, a new key per request,
// or with replay over keys completed during setup.
func engineVariant(name, op string, replay bool) variant {
	const replayKeys = 512
	var client *saga.Client
	scope := saga.Scope{Tenant: "t-sbs", Actor: "a-sbs"}
	run := func(ctx context.Context, key string) (*saga.Result, error) {
		return client.Run(ctx, op, &saga.Request{Scope: scope, Key: key, Method: "POST", Path: "/" + op, Body: body})
	}
	return variant{name: name,
		setup: func(ctx context.Context, p *pgxpool.Pool) error {
			if _, err := migrations.Migrate(ctx, p, &migrations.MigrateOpts{SkipRiver: true}); err != nil {
				return err
			}
			if err := exec(ordersDDL+";\n"+prefillOrders+";\n"+prefillKeysSQL)(ctx, p); err != nil {
				return err
			}
			var err error
			if client, err = saga.NewClient(&saga.Config{DB: p, Operations: engineOps()}); err != nil {
				return err
			}
			for i := range replayKeys * btoi(replay) {
				if _, err := run(ctx, fmt.Sprintf("replay-%06d", i)); err != nil {
					return err
				}
			}
			return nil
		},
		op: func(ctx context.Context, _ *pgxpool.Pool, i int) error {
			key := fmt.Sprintf("key-%09d", i)
			if replay {
				key = fmt.Sprintf("replay-%06d", i%replayKeys)
			}
			res, err := run(ctx, key)
			if err == nil && res.Replayed != replay {
				err = fmt.Errorf("%s: replayed %v, want %v", key, res.Replayed, replay)
			}
			return err
		},
	}
}

// exec runs sql, then VACUUM ANALYZE (which cannot share its multi-statement string).
func exec(sql string) func(ctx context.Context, p *pgxpool.Pool) error {
	return func(ctx context.Context, p *pgxpool.Pool) error {
		if _, err := p.Exec(ctx, sql); err != nil {
			return err
		}
		_, err := p.Exec(ctx, "VACUUM ANALYZE")
		return err
	}
}

// prefillKeysSQL fills today's key table with completed keys, as setupKeys does.
const prefillKeysSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash,
	request_body, status, recovery_point, lease_token, response_status, response_headers, response_body,
	completed_at, expires_at)
	SELECT 't-sbs', 'a-sbs', 'old-key-' || i, 'sbs_single', 'POST', '/sbs_single', '\x00'::bytea, '', 'completed',
	'finished', gen_random_uuid(), 201, '{}', '{"ok":true}', now(), now() + interval '1 day'
	FROM generate_series(1, 20000) i`

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
