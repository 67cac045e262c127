package pgpipe_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/dbtest"
	"github.com/pgsaga/pgsaga/internal/pgpipe"
)

// BenchmarkPhase compares one phase's transaction with pgx's Tx and with pgpipe's, in the same
// run: a phase with one statement (an INSERT) and a phase with none, each ending with the
// engine's key write. With pgx's Tx the key write already rides with COMMIT (as saga/phasetx.go
// does), so the difference is BEGIN's round trip, and for an empty phase BEGIN and COMMIT.
func BenchmarkPhase(b *testing.B) {
	db := dbtest.NewDB(b)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE item (id bigserial PRIMARY KEY, note text NOT NULL DEFAULT '');
		CREATE TABLE item_key (id bigint PRIMARY KEY, note text NOT NULL)`)
	if err != nil {
		b.Fatal(err)
	}
	trips := &kindCounter{}
	cfg := db.Pool.Config()
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpoolNew(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var next atomic.Int64
	keyWrite := func() *pgx.Batch {
		kb := &pgx.Batch{}
		kb.Queue(`INSERT INTO item_key (id, note) VALUES ($1, 'done') RETURNING id`, next.Add(1)).
			QueryRow(func(row pgx.Row) error { var id int64; return row.Scan(&id) })
		return kb
	}
	statement := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO item (note) VALUES ('x')`)
		return err
	}
	pgxPhase := func(withStatement bool) func() error {
		return func() error {
			conn, err := pool.Acquire(ctx)
			if err != nil {
				return err
			}
			defer conn.Release()
			tx, err := conn.Begin(ctx)
			if err != nil {
				return err
			}
			committed := false
			defer func() {
				if !committed { // as saga/phasetx.go: the COMMIT went in the batch, outside pgx's Tx
					_ = tx.Rollback(ctx)
				}
			}()
			if withStatement {
				if err := statement(ctx, tx); err != nil {
					return err
				}
			}
			kb := keyWrite()
			kb.Queue("commit")
			err = tx.Conn().SendBatch(ctx, kb).Close()
			committed = err == nil
			return err
		}
	}
	pipePhase := func(withStatement bool) func() error {
		return func() error {
			tx, err := pgpipe.Begin(ctx, pool, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if withStatement {
				if err := statement(ctx, tx); err != nil {
					return err
				}
			}
			return tx.CommitWith(ctx, keyWrite())
		}
	}
	for _, c := range []struct {
		name  string
		phase func() error
	}{
		{"statement/pgx", pgxPhase(true)},
		{"statement/pgpipe", pipePhase(true)},
		{"empty/pgx", pgxPhase(false)},
		{"empty/pgpipe", pipePhase(false)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range 20 {
				if err := c.phase(); err != nil {
					b.Fatal(err)
				}
			}
			trips.queries.Store(0)
			trips.batches.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := c.phase(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(trips.trips())/float64(b.N), "trips/op")
		})
	}
}

func pgxpoolNew(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	return pgxpool.NewWithConfig(ctx, cfg)
}
