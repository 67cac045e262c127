package perflab

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/bench/baseline"
	"github.com/pgsaga/pgsaga/bench/internal/sbsops"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

// floorVariants are the harness's hand-written baselines (package baseline): the 2-round-trip
// phased floor and idempotency written by hand in one pgx transaction.
func floorVariants() (floor2rt, hand1tx variant) {
	setup := func(ctx context.Context, p *pgxpool.Pool) error {
		_, err := p.Exec(ctx, baseline.DDL)
		return err
	}
	floor2rt = variant{name: "floor-2rt", setup: setup, op: func(ctx context.Context, p *pgxpool.Pool, i int) error {
		return baseline.Floor2RT(ctx, p)
	}}
	hand1tx = variant{name: "hand-1tx-idem", setup: setup, op: func(ctx context.Context, p *pgxpool.Pool, i int) error {
		return baseline.HandIdempotent(ctx, p, fmt.Sprint(i))
	}}
	return floor2rt, hand1tx
}

// engineVariant runs one of the engine's paths on a migrated database; schema, when set, runs
// after the migrations (an experiment's change). Replay answers keys completed beforehand.
func engineVariant(name, op string, replay bool, schema string) variant {
	var mu sync.Mutex
	clients := map[*pgxpool.Pool]*saga.Client{}
	scope := saga.Scope{Tenant: "t-sbs", Actor: "a-sbs"}
	run := func(ctx context.Context, c *saga.Client, key string) error {
		res, err := c.Run(ctx, op, &saga.Request{Scope: scope, Key: key, Method: "POST", Path: "/" + op, Body: body})
		if err == nil && res.Replayed != replay {
			err = fmt.Errorf("replayed %v, want %v", res.Replayed, replay)
		}
		return err
	}
	const replayKeys = 512
	return variant{name: name,
		setup: func(ctx context.Context, p *pgxpool.Pool) error {
			if _, err := migrations.Migrate(ctx, p, &migrations.MigrateOpts{SkipRiver: true}); err != nil {
				return err
			}
			if _, err := p.Exec(ctx, ordersDDL); err != nil {
				return err
			}
			if schema != "" {
				if _, err := p.Exec(ctx, schema); err != nil {
					return err
				}
			}
			c, err := saga.NewClient(&saga.Config{DB: p, Operations: sbsops.Operations()})
			if err != nil {
				return err
			}
			mu.Lock()
			clients[p] = c
			mu.Unlock()
			if replay {
				for i := range replayKeys {
					if _, err := c.Run(ctx, op, &saga.Request{Scope: scope, Key: fmt.Sprintf("replay-%06d", i), Method: "POST", Path: "/" + op, Body: body}); err != nil {
						return err
					}
				}
			}
			return nil
		},
		op: func(ctx context.Context, p *pgxpool.Pool, i int) error {
			mu.Lock()
			c := clients[p]
			mu.Unlock()
			if replay {
				return run(ctx, c, fmt.Sprintf("replay-%06d", i%replayKeys))
			}
			return run(ctx, c, fmt.Sprintf("k-%09d", i))
		},
	}
}

// TestLabEngine is the side-by-side harness's pgsaga rows against its hand-written floors, with
// the server's CPU read for the cluster only (the harness counts the whole machine).
//
//	go test ./bench/perflab -run TestLabEngine -lab -lab.rounds 4 -v
func TestLabEngine(t *testing.T) {
	requireLab(t)
	floor2rt, hand1tx := floorVariants()
	l := defaultLab()
	l.compare(t, os.Stdout, "phased against floor-2rt", []variant{floor2rt, engineVariant("pgsaga-phased", "sbs_phased", false, "")})
	l.compare(t, os.Stdout, "single and replay against hand-1tx-idem", []variant{hand1tx,
		engineVariant("pgsaga-1tx", "sbs_single", false, ""), engineVariant("pgsaga-replay", "sbs_single", true, "")})
}

// TestLabSchema compares the engine's phased path on migration 004's schema with changes to it.
//
//	go test ./bench/perflab -run TestLabSchema -lab -lab.rounds 4 -v
func TestLabSchema(t *testing.T) {
	requireLab(t)
	const noCallCheck = `ALTER TABLE pgsaga_call DROP CONSTRAINT pgsaga_call_outcome;`
	const merged = `DROP INDEX pgsaga_key_resumable_idx; DROP INDEX pgsaga_key_parked_idx;
		CREATE INDEX pgsaga_key_open_idx ON pgsaga_key (status, next_attempt_at) WHERE status IN ('started', 'failed');`
	const noBrin = `DROP INDEX pgsaga_key_age_brin;`
	const btree = `DROP INDEX pgsaga_key_age_brin; CREATE INDEX pgsaga_key_created_idx ON pgsaga_key (created_at);`
	defaultLab().compare(t, os.Stdout, "phased: schema changes", []variant{
		engineVariant("004", "sbs_phased", false, ""),
		engineVariant("004, no CHECK on the journal", "sbs_phased", false, noCallCheck),
		engineVariant("004, no journal CHECK, resumable+parked merged", "sbs_phased", false, noCallCheck+merged),
		engineVariant("004, no journal CHECK, merged, no BRIN", "sbs_phased", false, noCallCheck+merged+noBrin),
		engineVariant("004, no journal CHECK, merged, B-tree created_at", "sbs_phased", false, noCallCheck+merged+btree),
	})
}

// TestLabChecks measures what the key tables' CHECK constraints (migration 011) cost each path:
// as migrated (each rule a plpgsql function its CHECK calls), without them, and with each rule
// written as the CHECK's own expression (PostgreSQL prepares a table's CHECK expressions anew
// for every INSERT and UPDATE statement).
//
//	go test ./perflab -run TestLabChecks -lab -lab.rounds 4 -v
func TestLabChecks(t *testing.T) {
	requireLab(t)
	const none = `ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_state_machine;
		ALTER TABLE pgsaga_call DROP CONSTRAINT pgsaga_call_outcome;`
	const expressions = none + `
		ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_state_machine CHECK (attempts >= 1 AND
			CASE status
				WHEN 'started' THEN lease_token IS NOT NULL AND response_status IS NULL
				WHEN 'completed' THEN response_status BETWEEN 100 AND 599 AND response_body IS NOT NULL
					AND completed_at IS NOT NULL AND expires_at IS NOT NULL AND recovery_point = 'finished'
				WHEN 'failed' THEN response_status IS NULL
				ELSE false
			END);
		ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_call_outcome CHECK (
			call_outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown'));
		ALTER TABLE pgsaga_call ADD CONSTRAINT pgsaga_call_outcome CHECK (
			outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown'));`
	l := defaultLab()
	for _, path := range []struct {
		name, op string
		replay   bool
	}{{"pgsaga-1tx", "sbs_single", false}, {"pgsaga-phased", "sbs_phased", false}, {"pgsaga-replay", "sbs_single", true}} {
		l.compare(t, os.Stdout, path.name+": the key tables' CHECKs", []variant{
			engineVariant(path.name+", no CHECKs", path.op, path.replay, none),
			engineVariant(path.name+", CHECKs (migration 011)", path.op, path.replay, ""),
			engineVariant(path.name+", CHECKs as expressions", path.op, path.replay, expressions),
		})
	}
}

// TestLabVacuum measures what autovacuum adds to the phased path: the completion is never a HOT
// update (status is in the resumer's partial index), so every request leaves a dead key row
// version and its index entries behind.
func TestLabVacuum(t *testing.T) {
	requireLab(t)
	const noAutovacuum = `ALTER TABLE pgsaga_key SET (autovacuum_enabled = false); ALTER TABLE pgsaga_call SET (autovacuum_enabled = false);`
	floor2rt, _ := floorVariants()
	defaultLab().compare(t, os.Stdout, "phased: autovacuum", []variant{
		floor2rt,
		engineVariant("pgsaga-phased", "sbs_phased", false, ""),
		engineVariant("pgsaga-phased, no autovacuum on its tables", "sbs_phased", false, noAutovacuum),
	})
}
