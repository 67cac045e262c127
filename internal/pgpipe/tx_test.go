package pgpipe_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.NoMigrate}) }

// fixture is a test's database with a one-connection pool whose round trips are recorded: every
// transaction reuses the same connection, so one left dirty shows up in the next.
type fixture struct {
	t       *testing.T
	pool    *pgxpool.Pool
	counter *chaos.Counter
	pid     uint32 // the backend of the pool's connection
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `CREATE TABLE item (id int PRIMARY KEY, note text NOT NULL DEFAULT '')`)
	require.NoError(t, err)
	counter := &chaos.Counter{}
	pool, err := chaos.CountingPool(t.Context(), db.URL, 1, counter)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	f := &fixture{t: t, pool: pool, counter: counter}
	f.pid = f.backend()
	counter.Take()
	return f
}

// backend acquires the pool's connection and returns its backend's pid.
func (f *fixture) backend() uint32 {
	f.t.Helper()
	c, err := f.pool.Acquire(f.t.Context())
	require.NoError(f.t, err)
	defer c.Release()
	return c.Conn().PgConn().PID()
}

// requireClean checks that the connection went back to the pool idle, and is the same one.
func (f *fixture) requireClean() {
	f.t.Helper()
	c, err := f.pool.Acquire(f.t.Context())
	require.NoError(f.t, err)
	defer c.Release()
	require.Equal(f.t, byte('I'), c.Conn().PgConn().TxStatus(), "the connection came back inside a transaction")
	require.Equal(f.t, f.pid, c.Conn().PgConn().PID(), "the connection was replaced: it came back dirty")
}

// requireTrips checks the round trips sent since the last call: each given as its statements
// joined by " + ", each statement by how it begins (case-insensitive).
func (f *fixture) requireTrips(want ...string) {
	f.t.Helper()
	got := f.counter.Take()
	var g []string
	for _, trip := range got {
		g = append(g, strings.ToLower(trip.String()))
	}
	ok := len(g) == len(want)
	for i := 0; ok && i < len(want); i++ {
		stmts := strings.Split(strings.ToLower(want[i]), " + ")
		ok = len(stmts) == len(got[i])
		for j := 0; ok && j < len(stmts); j++ {
			ok = strings.HasPrefix(strings.ToLower(got[i][j]), stmts[j])
		}
	}
	require.True(f.t, ok, "want round trips:\n  %s\ngot:\n  %s", strings.Join(want, "\n  "), strings.Join(g, "\n  "))
}

func (f *fixture) ids() []int {
	f.t.Helper()
	rows, err := f.pool.Query(f.t.Context(), `SELECT id FROM item ORDER BY id`)
	require.NoError(f.t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(f.t, err)
	f.counter.Take()
	return ids
}

func (f *fixture) begin() *pgpipe.Tx {
	f.t.Helper()
	tx, err := pgpipe.Begin(f.t.Context(), f.pool, nil)
	require.NoError(f.t, err)
	return tx
}

// keyWrite is a batch of one statement whose result a callback reads, as the engine's key write.
func keyWrite(sql string, got *int) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(sql).QueryRow(func(row pgx.Row) error { return row.Scan(got) })
	return b
}

func TestFirstStatementCarriesBegin(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, c := range []struct {
		name string
		send func(tx pgx.Tx) error
		trip string
	}{
		{"Exec", func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
			return err
		}, "begin + INSERT"},
		{"QueryRow", func(tx pgx.Tx) error {
			var id int
			return tx.QueryRow(ctx, `INSERT INTO item (id) VALUES (1) RETURNING id`).Scan(&id)
		}, "begin + INSERT"},
		{"Query", func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `INSERT INTO item (id) VALUES (1) RETURNING id`)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
			if err == nil && len(ids) != 1 {
				err = errors.New("want one row")
			}
			return err
		}, "begin + INSERT"},
		{"SendBatch", func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO item (id) VALUES (1)`)
			b.Queue(`UPDATE item SET note = 'x' WHERE id = 1`)
			return tx.SendBatch(ctx, b).Close()
		}, "begin + INSERT + UPDATE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tx := f.begin()
			require.False(t, tx.Begun())
			require.NoError(t, c.send(tx))
			require.True(t, tx.Begun())
			var n int
			require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM item`).Scan(&n))
			require.Equal(t, 1, n)
			require.NoError(t, tx.Commit(ctx))
			f.requireTrips(c.trip, "SELECT count", "commit")
			require.Equal(t, []int{1}, f.ids())
			require.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed)
			f.requireClean()
		})
	}
}

// A phase that sends no statement commits its key write as one statement: no BEGIN, no COMMIT.
func TestCommitWithoutStatementsIsOneAutocommitRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	var wrote int
	sp, err := tx.Begin(ctx) // a savepoint that never carried a statement means nothing
	require.NoError(t, err)
	require.NoError(t, sp.Commit(ctx))
	require.NoError(t, tx.CommitWith(ctx, keyWrite(`INSERT INTO item (id) VALUES (1) RETURNING id`, &wrote)))
	require.False(t, tx.Begun())
	require.Equal(t, 1, wrote)
	f.requireTrips("INSERT")
	require.Equal(t, []int{1}, f.ids())
	f.requireClean()
}

// The statements of an autocommit CommitWith are one implicit transaction: all or none.
func TestAutocommitCommitWithIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO item (id) VALUES (1)`)
	b.Queue(`INSERT INTO item (id) VALUES (1)`) // unique violation
	err := tx.CommitWith(ctx, b)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "23505", pgErr.Code)
	f.requireTrips("INSERT + INSERT")
	require.Empty(t, f.ids())
	f.requireClean()
}

// A final write that raises keeps the pipelined COMMIT from running: nothing commits, and the
// connection comes back clean (one ROLLBACK more, on this failure path only).
func TestFailedWriteSkipsCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	_, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
	require.NoError(t, err)
	var got int
	err = tx.CommitWith(ctx, keyWrite(`WITH written AS (UPDATE item SET note = 'x' WHERE id = 99 RETURNING 1)
		SELECT 1 / count(*) FROM written`, &got))
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22012", pgErr.Code) // division by zero: the fence's zero rows
	f.requireTrips("begin + INSERT", "WITH written + commit", "rollback")
	require.Empty(t, f.ids())
	require.ErrorIs(t, tx.Commit(ctx), pgx.ErrTxClosed)
	f.requireClean()
}

// A write that returns no row is not an error: the COMMIT behind it runs. This is why a fence
// must raise, and why a callback's error is reported as committed.
func TestCallbackErrorAfterCommitSaysCommitted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	_, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
	require.NoError(t, err)
	var got int
	err = tx.CommitWith(ctx, keyWrite(`UPDATE item SET note = 'x' WHERE id = 99 RETURNING 1`, &got))
	var committed *pgpipe.CommittedError
	require.ErrorAs(t, err, &committed)
	require.ErrorIs(t, err, pgx.ErrNoRows)
	require.Equal(t, []int{1}, f.ids())
	f.requireClean()
}

func TestErrorInTheFirstStatement(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("server error: the transaction is aborted, Rollback ends it", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		_, err := f.pool.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.NoError(t, err)
		f.counter.Take()
		tx := f.begin()
		_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "23505", pgErr.Code)
		require.True(t, tx.Begun())
		_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (2)`)
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "25P02", pgErr.Code) // in failed transaction
		require.NoError(t, tx.Rollback(ctx))
		f.requireTrips("begin + INSERT", "INSERT", "rollback")
		require.Equal(t, []int{1}, f.ids())
		f.requireClean()
	})

	t.Run("nothing sent: BEGIN stays pending", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx := f.begin()
		_, err := tx.Exec(ctx, `INSRT INTO item (id) VALUES (1)`) // fails to prepare: nothing runs
		require.Error(t, err)
		require.False(t, tx.Begun())
		_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.NoError(t, err)
		require.True(t, tx.Begun())
		require.NoError(t, tx.Commit(ctx))
		require.Equal(t, []int{1}, f.ids())
		f.requireClean()
	})

	t.Run("BEGIN itself fails", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx, err := pgpipe.Begin(ctx, f.pool, &pgpipe.BeginOpts{TxOptions: pgx.TxOptions{BeginQuery: "begin isolation level nonsense"}})
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.ErrorContains(t, err, "error beginning transaction")
		require.False(t, tx.Begun())
		require.NoError(t, tx.Rollback(ctx))
		require.Empty(t, f.ids())
		f.requireClean()
	})
}

func TestRowsLeftOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("first round trip", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx := f.begin()
		rows, err := tx.Query(ctx, `SELECT generate_series(1, 1000)`)
		require.NoError(t, err)
		require.True(t, rows.Next()) // one row read, the rest left unread, rows not closed
		_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		require.Equal(t, []int{1}, f.ids())
		f.requireClean()
	})

	t.Run("later query and a QueryRow never scanned, then Commit", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx := f.begin()
		_, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.NoError(t, err)
		_, err = tx.Query(ctx, `SELECT generate_series(1, 1000)`)
		require.NoError(t, err)
		_ = tx.QueryRow(ctx, `SELECT 1`)
		require.NoError(t, tx.Commit(ctx))
		require.Equal(t, []int{1}, f.ids())
		f.requireClean()
	})

	t.Run("batch results not closed, then Rollback", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx := f.begin()
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO item (id) VALUES (1)`)
		b.Queue(`SELECT generate_series(1, 1000)`)
		_ = tx.SendBatch(ctx, b)
		require.NoError(t, tx.Rollback(ctx))
		require.Empty(t, f.ids())
		f.requireClean()
	})
}

// A context cancelled while the first round trip runs: pgx closes the connection; the Tx ends
// without hanging, the pool replaces the connection, and the server ends the session, rolling
// its transaction back.
func TestContextCancelledMidBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tx := f.begin()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO item (id) VALUES (1)`)
	b.Queue(`SELECT pg_sleep(30)`)
	err := tx.SendBatch(ctx, b).Close()
	require.Error(t, err)
	start := time.Now()
	_ = tx.Rollback(t.Context())
	require.Less(t, time.Since(start), 5*time.Second)

	c, err := f.pool.Acquire(t.Context())
	require.NoError(t, err)
	require.Equal(t, byte('I'), c.Conn().PgConn().TxStatus())
	require.NotEqual(t, f.pid, c.Conn().PgConn().PID(), "the cancelled connection must not be reused")
	c.Release()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, f.pid).Scan(&n))
		if n == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the cancelled session is still there")
		time.Sleep(20 * time.Millisecond) // polling the server's view, with a deadline
	}
	require.Empty(t, f.ids())
}

func TestSavepoints(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	t.Run("rolled back and released, pipelined with the next statements", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx := f.begin()
		sp, err := tx.Begin(ctx)
		require.NoError(t, err)
		_, err = sp.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.NoError(t, err)
		require.NoError(t, sp.Rollback(ctx))
		require.ErrorIs(t, sp.Rollback(ctx), pgx.ErrTxClosed)
		_, err = sp.Exec(ctx, `INSERT INTO item (id) VALUES (9)`)
		require.ErrorIs(t, err, pgx.ErrTxClosed)

		sp, err = tx.Begin(ctx)
		require.NoError(t, err)
		nested, err := sp.Begin(ctx)
		require.NoError(t, err)
		_, err = nested.Exec(ctx, `INSERT INTO item (id) VALUES (2)`)
		require.NoError(t, err)
		require.NoError(t, nested.Commit(ctx))
		require.NoError(t, sp.Commit(ctx))
		var wrote int
		require.NoError(t, tx.CommitWith(ctx, keyWrite(`INSERT INTO item (id) VALUES (3) RETURNING id`, &wrote)))
		f.requireTrips(
			"begin + savepoint sp_1 + INSERT",
			"rollback to savepoint sp_1 + savepoint sp_2 + savepoint sp_3 + INSERT",
			"release savepoint sp_3 + release savepoint sp_2 + INSERT + commit",
		)
		require.Equal(t, []int{2, 3}, f.ids())
		f.requireClean()
	})

	t.Run("a failed statement rolled back to its savepoint, as RunTx does", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		tx := f.begin()
		_, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.NoError(t, err)
		sp, err := tx.Begin(ctx)
		require.NoError(t, err)
		_, err = sp.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
		require.Error(t, err)
		require.NoError(t, sp.Rollback(ctx))
		require.NoError(t, tx.Commit(ctx))
		f.requireTrips("begin + INSERT", "savepoint sp_1 + INSERT", "rollback to savepoint sp_1 + commit")
		require.Equal(t, []int{1}, f.ids())
		f.requireClean()
	})
}

func TestNothingSent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	_, err := tx.Begin(ctx) // a savepoint alone sends nothing
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	tx = f.begin()
	require.NoError(t, tx.Commit(ctx))
	f.requireTrips()
	f.requireClean()
}

func TestCopyFromSendsBeginFirst(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"item"}, []string{"id"}, pgx.CopyFromRows([][]any{{1}, {2}}))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.True(t, tx.Begun())
	require.NoError(t, tx.Rollback(ctx))
	f.requireTrips("begin", "rollback") // the COPY itself is not a query the counter sees
	require.Empty(t, f.ids())
	f.requireClean()
}

func TestLargeObjects(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	tx := f.begin()
	lo := tx.LargeObjects()
	oid, err := lo.Create(ctx, 0)
	require.NoError(t, err)
	obj, err := lo.Open(ctx, oid, pgx.LargeObjectModeWrite)
	require.NoError(t, err)
	_, err = obj.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, obj.Close())
	require.NoError(t, tx.Commit(ctx))
	f.requireClean()
}

// Whether a CommitWith committed is decided by the server's answer, not by how a callback words
// its error: a callback that rewords a server error without wrapping it is still "nothing
// committed", and a callback that fails to decode a result after a COMMIT that ran is
// "committed".
func TestCommitWithTellsServerErrorsFromCallbackErrors(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	reworded := func(sql string) *pgx.Batch {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO item (id) VALUES (2)`)
		b.Queue(sql).QueryRow(func(row pgx.Row) error {
			var n int
			if err := row.Scan(&n); err != nil {
				return errors.New("could not read: " + err.Error()) // not wrapped
			}
			return nil
		})
		return b
	}
	for _, c := range []struct {
		name          string
		withStatement bool
		sql           string
		committed     bool
	}{
		{"autocommit, statement raises", false, `SELECT 1 / 0`, false},
		{"transaction, statement raises", true, `SELECT 1 / 0`, false},
		{"autocommit, result not decodable", false, `SELECT 'x'::text`, true},
		{"transaction, result not decodable", true, `SELECT 'x'::text`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tx := f.begin()
			want := []int{2}
			if c.withStatement {
				_, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
				require.NoError(t, err)
				want = []int{1, 2}
			}
			err := tx.CommitWith(ctx, reworded(c.sql))
			require.Error(t, err)
			var committed *pgpipe.CommittedError
			if c.committed {
				require.ErrorAs(t, err, &committed)
				require.Equal(t, want, f.ids())
			} else {
				require.False(t, errors.As(err, &committed), "reported committed: %v", err)
				var pgErr *pgconn.PgError
				require.ErrorAs(t, err, &pgErr)
				require.Empty(t, f.ids())
			}
			f.requireClean()
		})
	}
}

// A connection whose socket was closed outside pgx, before the transaction sent anything, is
// one pgx has not seen die: the deferred Rollback then ends the Tx, and the connection must not
// go back to the pool as if it were usable (the next request would fail on a closed socket).
// (An in-process crash, internal/testkit/crash, tells pgx itself.)
func TestSocketClosedUnderAnUnsentTxIsNotReused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tx, err := pgpipe.Begin(t.Context(), f.pool, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Conn().PgConn().Conn().Close())
	require.NoError(t, tx.Rollback(t.Context()), "nothing was sent: nothing to roll back")

	var one int
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT 1`).Scan(&one), "the pool replaced the dead connection")
	require.Equal(t, 1, one)
}

// kindCounter tells statements sent alone from batches (pipelines), and counts nothing else, so
// that it costs nothing in a benchmark's figures.
type kindCounter struct{ queries, batches atomic.Int64 }

// trips is the round trips counted: one per statement sent alone or batch.
func (c *kindCounter) trips() int64 { return c.queries.Load() + c.batches.Load() }

func (c *kindCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}
func (c *kindCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *kindCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return ctx
}
func (c *kindCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *kindCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// A transaction that sent nothing and commits one statement sends it as a plain query, not as a
// pipeline of one: the same implicit transaction, without pgx's pipeline bookkeeping. Its
// server errors and its callback's errors are told apart as in a pipeline.
func TestLoneAutocommitStatementIsAPlainQuery(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE item (id int PRIMARY KEY)`)
	require.NoError(t, err)
	kinds := &kindCounter{}
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = kinds
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	tx, err := pgpipe.Begin(ctx, pool, nil)
	require.NoError(t, err)
	var got int
	require.NoError(t, tx.CommitWith(ctx, keyWrite(`INSERT INTO item (id) VALUES (1) RETURNING id`, &got)))
	require.Equal(t, 1, got)
	require.EqualValues(t, 1, kinds.queries.Load())
	require.EqualValues(t, 0, kinds.batches.Load())

	for _, c := range []struct {
		name, sql string
		rows      int // rows in item afterwards
		committed bool
	}{
		{"raises", `INSERT INTO item (id) VALUES (1) RETURNING id`, 1, false},
		{"not decodable", `INSERT INTO item (id) VALUES (2) RETURNING 'x'::text`, 2, true},
		{"no row", `UPDATE item SET id = id WHERE id = 99 RETURNING id`, 2, true},
	} {
		tx, err := pgpipe.Begin(ctx, pool, nil)
		require.NoError(t, err)
		b := &pgx.Batch{}
		b.Queue(c.sql).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&got); err != nil {
				return errors.New("could not read: " + err.Error()) // reworded, not wrapped
			}
			return nil
		})
		err = tx.CommitWith(ctx, b)
		require.Error(t, err, c.name)
		var committed *pgpipe.CommittedError
		require.Equal(t, c.committed, errors.As(err, &committed), "%s: %v", c.name, err)
		if !c.committed {
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr, c.name)
			require.Equal(t, "23505", pgErr.Code)
		}
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM item`).Scan(&n))
		require.Equal(t, c.rows, n, c.name)
	}
	require.EqualValues(t, 0, kinds.batches.Load())
}

// CommitRow is CommitWith for one statement's row: alone (the transaction sent nothing) it is a
// plain query, with CommitWith's errors; after a statement it goes with COMMIT.
func TestCommitRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE item (id int PRIMARY KEY)`)
	require.NoError(t, err)
	kinds := &kindCounter{}
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	cfg.ConnConfig.Tracer = kinds
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	count := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM item`).Scan(&n))
		return n
	}

	var got int
	read := func(row pgx.Row) error {
		if err := row.Scan(&got); err != nil {
			return errors.New("could not read: " + err.Error()) // reworded, not wrapped
		}
		return nil
	}
	tx, err := pgpipe.Begin(ctx, pool, nil)
	require.NoError(t, err)
	require.NoError(t, tx.CommitRow(ctx, read, `INSERT INTO item (id) VALUES ($1) RETURNING id`, 1))
	require.Equal(t, 1, got)
	require.EqualValues(t, 0, kinds.batches.Load(), "alone: a plain query")

	for _, c := range []struct {
		name, sql string
		rows      int // rows in item afterwards
		committed bool
	}{
		{"raises", `INSERT INTO item (id) VALUES (1) RETURNING id`, 1, false},
		{"not decodable", `INSERT INTO item (id) VALUES (2) RETURNING 'x'::text`, 2, true},
		{"no row", `UPDATE item SET id = id WHERE id = 99 RETURNING id`, 2, true},
	} {
		tx, err := pgpipe.Begin(ctx, pool, nil)
		require.NoError(t, err)
		err = tx.CommitRow(ctx, read, c.sql)
		require.Error(t, err, c.name)
		var committed *pgpipe.CommittedError
		require.Equal(t, c.committed, errors.As(err, &committed), "%s: %v", c.name, err)
		if !c.committed {
			var pgErr *pgconn.PgError
			require.ErrorAs(t, err, &pgErr, c.name)
			require.Equal(t, "23505", pgErr.Code)
		}
		require.Equal(t, c.rows, count(), c.name)
	}
	require.EqualValues(t, 0, kinds.batches.Load())

	// After a statement: the row's statement and COMMIT in one round trip, all or nothing.
	tx, err = pgpipe.Begin(ctx, pool, nil)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (3)`)
	require.NoError(t, err)
	err = tx.CommitRow(ctx, read, `INSERT INTO item (id) VALUES (1) RETURNING id`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, 2, count(), "the statement before it rolled back with it")
	tx, err = pgpipe.Begin(ctx, pool, nil)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (3)`)
	require.NoError(t, err)
	require.NoError(t, tx.CommitRow(ctx, read, `INSERT INTO item (id) VALUES (4) RETURNING id`))
	require.Equal(t, 4, got)
	require.Equal(t, 4, count())
	var idle bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT true`).Scan(&idle), "the connection went back clean")
}

// RollbackConfirmed: after a transaction that sent statements, one round trip rolls it back and
// commits a transaction of one WAL record (that a synchronous standby must acknowledge is
// saga.TestRejectionWaitsForTheStandby's); after one that sent nothing, nothing is sent.
func TestRollbackConfirmed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)

	tx := f.begin()
	_, err := tx.Exec(ctx, `SELECT 1`)
	require.NoError(t, err)
	f.counter.Take()
	require.NoError(t, tx.RollbackConfirmed(ctx))
	f.requireTrips("rollback; select pg_logical_emit_message")
	require.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed)
	f.counter.Take()
	f.requireClean()

	tx = f.begin()
	_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
	require.NoError(t, err)
	require.NoError(t, tx.RollbackConfirmed(ctx))
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM item`).Scan(&n))
	require.Zero(t, n, "rolled back")
	f.counter.Take()

	tx = f.begin()
	require.NoError(t, tx.RollbackConfirmed(ctx))
	f.requireTrips()
	f.requireClean()
}
