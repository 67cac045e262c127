// Package sbsops is pgsaga's side of the side-by-side comparison: the two operations the
// benchmarks run against the hand-written baselines (bench/baseline). The side-by-side harness
// (sidebyside), the retention benchmark's WAL measurement (retention) and the performance lab
// (perflab) all take them from here, so their figures measure the same operations.
package sbsops

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
)

// Operation names, as stored with each key.
const (
	// Single is the single-transaction order: the transaction that claims the key inserts one
	// row into sbs_orders (baseline.DDL) and stores the response.
	Single = "sbs_single"
	// Phased is the phased request: two no-op phases around a no-op call.
	Phased = "sbs_phased"
)

// Operations returns Single and Phased.
func Operations() []*phases.Operation {
	noop := func(context.Context, pgx.Tx, *phases.Run) error { return nil }
	return []*phases.Operation{
		{Name: Single, Steps: []phases.Step{
			phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO sbs_orders(ref, amount) VALUES ($1, 100) RETURNING id`, run.Key()).Scan(&id); err != nil {
					return err
				}
				return run.Respond(201, map[string]any{"id": id})
			}),
		}},
		{Name: Phased, Steps: []phases.Step{
			phases.Atomic("created", noop),
			phases.Call("charged", func(context.Context, *phases.Run) error { return nil }),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(201, map[string]any{"ok": true})
			}),
		}},
	}
}
