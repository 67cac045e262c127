package pgpipe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// typedTable has a column of each kind the engine sends: jsonb (from []byte), text[], a
// timestamptz and a bigint.
const typedTable = `CREATE TABLE typed (
	id    bigint PRIMARY KEY,
	doc   jsonb NOT NULL,
	tags  text[] NOT NULL,
	at    timestamptz NOT NULL,
	big   bigint NOT NULL,
	note  text NOT NULL DEFAULT '')`

// session is where a statement ran: the server process and its transaction.
type session struct{ pid, xid int64 }

// TestPgBouncerPipelinesStayInOneSession runs pgpipe transactions through PgBouncer in
// transaction pooling mode with pgx's QueryExecModeCacheDescribe, from more clients than the
// bouncer has server connections: BEGIN riding with the first statement, a statement on its
// own, the final write riding with COMMIT, and a transaction that commits its final statements
// as one implicit transaction, and a read outside any transaction (as the engine reads a key).
// Every statement of a transaction runs in one server session and
// one transaction, and every type comes back as it was sent.
func TestPgBouncerPipelinesStayInOneSession(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(ctx, typedTable)
	require.NoError(t, err)
	pool := db.PooledPool(t, "default_query_exec_mode=cache_describe")

	const clients, perClient = 8, 40
	at := time.Date(2031, 2, 3, 4, 5, 6, 789012000, time.UTC)
	var mu sync.Mutex
	servers := map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				id := int64(c*perClient + i)
				pid, err := phase(ctx, pool, id, at)
				if err == nil {
					err = implicit(ctx, pool, id)
				}
				if err == nil {
					err = standalone(ctx, pool, id)
				}
				if err != nil {
					errs <- fmt.Errorf("client %d, transaction %d: %w", c, i, err)
					return
				}
				mu.Lock()
				servers[pid] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, dbtest.BouncerLog())
	}
	require.Greater(t, len(servers), 1, "the transactions ran on several server connections")

	// What was sent came back: jsonb from []byte, arrays, timestamps to the microsecond,
	// bigint at its bounds.
	rows, err := pool.Query(ctx, `SELECT id, doc, tags, at, big, note FROM typed ORDER BY id`)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var id, big int64
		var doc map[string]any
		var tags []string
		var got time.Time
		var note string
		require.NoError(t, rows.Scan(&id, &doc, &tags, &got, &big, &note))
		require.Equal(t, map[string]any{"id": float64(id), "nested": []any{"a", "b"}}, doc)
		require.Equal(t, []string{"x", fmt.Sprint(id), `quote"d`}, tags)
		require.True(t, at.Equal(got), "timestamp %s came back as %s", at, got)
		require.Equal(t, bigFor(id), big)
		require.Equal(t, "done", note)
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, clients*perClient, n)
}

func bigFor(id int64) int64 {
	if id%2 == 0 {
		return math.MaxInt64 - id
	}
	return math.MinInt64 + id
}

// phase is a phase's transaction: BEGIN with an INSERT, a statement of its own, and the final
// write with COMMIT. It checks that all three ran in one session and one transaction, and
// returns the server process.
func phase(ctx context.Context, pool pgpipe.Acquirer, id int64, at time.Time) (int64, error) {
	tx, err := pgpipe.Begin(ctx, pool, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	doc, err := json.Marshal(map[string]any{"id": id, "nested": []string{"a", "b"}})
	if err != nil {
		return 0, err
	}
	var first, mid, last session
	err = tx.QueryRow(ctx, `INSERT INTO typed (id, doc, tags, at, big) VALUES ($1, $2, $3, $4, $5)
		RETURNING pg_backend_pid(), txid_current()`,
		id, doc, []string{"x", fmt.Sprint(id), `quote"d`}, at, bigFor(id)).Scan(&first.pid, &first.xid)
	if err != nil {
		return 0, fmt.Errorf("first statement: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid(), txid_current()`).Scan(&mid.pid, &mid.xid); err != nil {
		return 0, fmt.Errorf("middle statement: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE typed SET note = 'done' WHERE id = $1 RETURNING pg_backend_pid(), txid_current()`, id).
		QueryRow(func(row pgx.Row) error { return row.Scan(&last.pid, &last.xid) })
	if err := tx.CommitWith(ctx, b); err != nil {
		return 0, fmt.Errorf("final write with COMMIT: %w", err)
	}
	if first != mid || mid != last {
		return 0, fmt.Errorf("one transaction ran in several sessions: %+v, %+v, %+v", first, mid, last)
	}
	return first.pid, nil
}

// implicit commits two final statements without a phase statement: one implicit transaction.
func implicit(ctx context.Context, pool pgpipe.Acquirer, id int64) error {
	tx, err := pgpipe.Begin(ctx, pool, nil)
	if err != nil {
		return err
	}
	var a, c session
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_backend_pid(), txid_current() FROM typed WHERE id = $1`, id).
		QueryRow(func(row pgx.Row) error { return row.Scan(&a.pid, &a.xid) })
	b.Queue(`SELECT pg_backend_pid(), txid_current()`).
		QueryRow(func(row pgx.Row) error { return row.Scan(&c.pid, &c.xid) })
	if err := tx.CommitWith(ctx, b); err != nil {
		return fmt.Errorf("implicit transaction: %w", err)
	}
	if a != c {
		return fmt.Errorf("an implicit transaction ran in several sessions: %+v, %+v", a, c)
	}
	return nil
}

// standalone reads the row outside any transaction, as the engine reads a key: a statement
// whose description and execution could land on different server connections.
func standalone(ctx context.Context, pool *pgxpool.Pool, id int64) error {
	var note string
	var big int64
	if err := pool.QueryRow(ctx, `SELECT note, big FROM typed WHERE id = $1`, id).Scan(&note, &big); err != nil {
		return fmt.Errorf("read outside a transaction: %w", err)
	}
	if note != "done" || big != bigFor(id) {
		return fmt.Errorf("read outside a transaction: got %q, %d", note, big)
	}
	return nil
}
