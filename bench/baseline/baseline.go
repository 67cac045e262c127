// Package baseline is the hand-written SQL the benchmarks measure pgsaga against: a table of
// keys and one of orders, idempotency written by hand in one transaction, and the two-round-trip
// floor of a phased request. The side-by-side harness (sidebyside) and the performance lab
// (perflab) run the same statements, so their figures compare.
package baseline

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DDL creates the baselines' tables when they are missing.
const DDL = `
CREATE TABLE IF NOT EXISTS sbs_keys(key uuid PRIMARY KEY, phase text NOT NULL, recovery_point text,
  locked_until timestamptz, response jsonb, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS sbs_orders(id bigserial PRIMARY KEY, ref text NOT NULL, amount bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now());`

// HandIdempotent is idempotency as a user writes it by hand, in one pgx transaction: claim a new
// key, insert the order (ref), store the response.
func HandIdempotent(ctx context.Context, pool *pgxpool.Pool, ref string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		k := uuid.New()
		tag, err := tx.Exec(ctx, `INSERT INTO sbs_keys(key, phase) VALUES ($1, 'started') ON CONFLICT DO NOTHING`, k)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO sbs_orders(ref, amount) VALUES ($1, 100) RETURNING id`, ref).Scan(&id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sbs_keys SET phase='finished', response=jsonb_build_object('id', $2::bigint) WHERE key=$1`, k, id)
		return err
	})
}

// Floor2RT is the floor of a phased request: the claim of a new key (one INSERT) and its finish
// (one UPDATE), in two round trips, with nothing between them (where the call would be).
func Floor2RT(ctx context.Context, pool *pgxpool.Pool) error {
	k := uuid.New()
	var phase string
	if err := pool.QueryRow(ctx, `INSERT INTO sbs_keys(key, phase, recovery_point, locked_until) VALUES ($1,'started','created', now()+interval '30 s')
		ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key RETURNING phase`, k).Scan(&phase); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `UPDATE sbs_keys SET phase='finished', recovery_point='recorded', response='{"ok":true}', locked_until=NULL WHERE key=$1 AND phase='started'`, k)
	return err
}
