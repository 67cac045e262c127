package crash_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.NoMigrate}) }

// A goroutine that dies holding a transaction leaves it to the server: the transaction stays open
// with its row lock until the server hears the socket end (SilentSockets holds that back), the
// deferred rollback sends nothing, and then PostgreSQL aborts it and ends the session. The pool
// opens a new connection rather than hand out the dead one. It holds for pgx's transactions and
// for the engine's lazy ones (pgpipe), and through PgBouncer in transaction pooling mode, which
// drops its server connection when the client's goes mid-transaction.
func TestDieLeavesTheTransactionToTheServer(t *testing.T) {
	t.Parallel()
	pgxBegin := func(ctx context.Context, pool *pgxpool.Pool) (pgx.Tx, error) { return pool.Begin(ctx) }
	pgpipeBegin := func(ctx context.Context, pool *pgxpool.Pool) (pgx.Tx, error) { return pgpipe.Begin(ctx, pool, nil) }
	direct := func(_ *testing.T, db *dbtest.DB) string { return db.URL }
	bounced := func(t *testing.T, db *dbtest.DB) string {
		return db.PooledURL(t, "default_query_exec_mode=cache_describe")
	}
	for _, c := range []struct {
		name  string
		begin func(context.Context, *pgxpool.Pool) (pgx.Tx, error)
		url   func(*testing.T, *dbtest.DB) string
	}{
		{"pgx", pgxBegin, direct},
		{"pgpipe", pgpipeBegin, direct},
		{"pgpipe through PgBouncer", pgpipeBegin, bounced},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := dbtest.NewDB(t)
			_, err := db.Pool.Exec(ctx, `CREATE TABLE seat (id int PRIMARY KEY, held bool NOT NULL); INSERT INTO seat VALUES (1, true)`)
			require.NoError(t, err)
			sockets := &chaos.SilentSockets{}
			t.Cleanup(sockets.HangUp)
			cfg, err := pgxpool.ParseConfig(c.url(t, db))
			require.NoError(t, err)
			cfg.MaxConns = 1
			cfg.ConnConfig.DialFunc = sockets.Dial
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)

			var (
				pid         uint32
				rolledBack  = make(chan struct{}, 1)
				reachedNext bool
			)
			died := crash.Run(func() {
				tx, err := c.begin(ctx, pool)
				require.NoError(t, err)
				defer func() {
					_ = tx.Rollback(ctx)
					rolledBack <- struct{}{}
				}()
				require.NoError(t, tx.QueryRow(ctx, `UPDATE seat SET held = false WHERE id = 1 RETURNING pg_backend_pid()`).Scan(&pid))
				crash.Die(tx.Conn())
				reachedNext = true
			})
			require.True(t, died)
			require.False(t, reachedNext, "nothing after Die runs")
			require.Len(t, rolledBack, 1, "the deferred rollback ran (below: it reached nothing)")

			var state string
			require.NoError(t, db.Pool.QueryRow(ctx, `SELECT state FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&state))
			require.Equal(t, "idle in transaction", state, "no ROLLBACK arrived")
			_, err = db.Pool.Exec(ctx, `SELECT 1 FROM seat WHERE id = 1 FOR UPDATE NOWAIT`)
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr, "the dead session still holds the row")
			require.Equal(t, "55P03", pgErr.Code)

			sockets.HangUp()
			require.Eventually(t, func() bool {
				var n int
				require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n))
				return n == 0
			}, 30*time.Second, 10*time.Millisecond, "PostgreSQL ends the session whose socket closed")
			var held bool
			require.NoError(t, db.Pool.QueryRow(ctx, `SELECT held FROM seat WHERE id = 1 FOR UPDATE NOWAIT`).Scan(&held))
			require.True(t, held, "the server aborted the dead session's transaction")

			var next uint32
			require.NoError(t, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&next))
			require.NotEqual(t, pid, next, "the pool opened a new connection instead of the dead one")
		})
	}
}

// A goroutine that dies holding nothing just ends: its deferred calls run, nothing after Die does.
func TestDieHoldingNothing(t *testing.T) {
	t.Parallel()
	deferred, after := false, false
	require.True(t, crash.Run(func() {
		defer func() { deferred = true }()
		crash.Die()
		after = true
	}))
	require.True(t, deferred)
	require.False(t, after)
	require.False(t, crash.Run(func() {}), "a function that returns did not die")
}
