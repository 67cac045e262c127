package pgpipe_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
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

// BenchmarkPgBouncerExecModes measures pgx's query exec modes on a phase's transaction (BEGIN
// with an INSERT, the key write with COMMIT) followed by a read outside any transaction (as the
// engine reads a key), from 8 goroutines, directly and through PgBouncer in transaction pooling
// mode. Arguments are text and bigint only, which every mode can send. errors/op counts what
// failed instead of failing the benchmark: behind the bouncer, cache_statement collides on
// prepared statement names and describe_exec binds to an unnamed statement another client
// prepared on the same server connection.
func BenchmarkPgBouncerExecModes(b *testing.B) {
	db := dbtest.NewDB(b)
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE item (id bigint PRIMARY KEY, note text NOT NULL);
		CREATE TABLE item_key (id bigint PRIMARY KEY, note text NOT NULL)`)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	op := func(pool *pgxpool.Pool) error {
		id := next.Add(1)
		tx, err := pgpipe.Begin(ctx, pool, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, `INSERT INTO item (id, note) VALUES ($1, $2)`, id, "x"); err != nil {
			return err
		}
		kb := &pgx.Batch{}
		kb.Queue(`INSERT INTO item_key (id, note) VALUES ($1, $2) RETURNING id`, id, "done").
			QueryRow(func(row pgx.Row) error { var id int64; return row.Scan(&id) })
		if err := tx.CommitWith(ctx, kb); err != nil {
			return err
		}
		var note string
		return pool.QueryRow(ctx, `SELECT note FROM item_key WHERE id = $1`, id).Scan(&note)
	}
	for _, via := range []string{"direct", "pgbouncer"} {
		for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
			b.Run(via+"/"+mode, func(b *testing.B) {
				url := db.URL + "&default_query_exec_mode=" + mode
				if via == "pgbouncer" {
					url = db.PooledURL(b, "default_query_exec_mode="+mode)
				}
				cfg, err := pgxpool.ParseConfig(url)
				if err != nil {
					b.Fatal(err)
				}
				cfg.MaxConns = 8
				pool, err := pgxpool.NewWithConfig(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				var failed atomic.Int64
				for range 20 {
					if op(pool) != nil {
						failed.Add(1)
					}
				}
				failed.Store(0)
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if op(pool) != nil {
							failed.Add(1)
						}
					}
				})
				b.ReportMetric(float64(failed.Load())/float64(b.N), "errors/op")
			})
		}
	}
}
