package saga_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// connDB is a saga.DB over one *pgx.Conn, used by one caller at a time: what a program holding
// a single connection gives the client instead of a pool.
type connDB struct {
	mu   sync.Mutex
	conn *pgx.Conn
}

var (
	_ saga.DB     = (*connDB)(nil)
	_ saga.ConnDB = (*connDB)(nil)
)

func (d *connDB) AcquireConn(context.Context) (*pgx.Conn, func(), error) {
	d.mu.Lock()
	return d.conn, d.mu.Unlock, nil
}

func (d *connDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conn.Exec(ctx, sql, args...)
}

// Query holds the connection until the rows are closed.
func (d *connDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	d.mu.Lock()
	rows, err := d.conn.Query(ctx, sql, args...)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return &connRows{Rows: rows, release: d.mu.Unlock}, nil
}

// QueryRow holds the connection until the row is scanned.
func (d *connDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	d.mu.Lock()
	row := d.conn.QueryRow(ctx, sql, args...)
	return connRow{row: row, release: d.mu.Unlock}
}

// Begin holds the connection until the transaction ends.
func (d *connDB) Begin(ctx context.Context) (pgx.Tx, error) {
	d.mu.Lock()
	tx, err := d.conn.Begin(ctx)
	if err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return &connTx{Tx: tx, release: d.mu.Unlock}, nil
}

type connTx struct {
	pgx.Tx
	release func()
	once    sync.Once
}

func (tx *connTx) Commit(ctx context.Context) error {
	defer tx.once.Do(tx.release)
	return tx.Tx.Commit(ctx)
}

func (tx *connTx) Rollback(ctx context.Context) error {
	defer tx.once.Do(tx.release)
	return tx.Tx.Rollback(ctx)
}

type connRows struct {
	pgx.Rows
	release func()
	once    sync.Once
}

func (r *connRows) Close() {
	r.Rows.Close()
	r.once.Do(r.release)
}

func (r *connRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type connRow struct {
	row     pgx.Row
	release func()
}

func (r connRow) Scan(dest ...any) error {
	defer r.release()
	return r.row.Scan(dest...)
}

// A client runs on any DB that lends connections, not only on a pool: here one *pgx.Conn. A
// phased operation runs its phases and its call on it, and a retry replays the stored response.
func TestClientOnOneConnection(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	conn, err := pgx.Connect(t.Context(), db.URL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	calls := 0
	client, err := saga.NewClient(&saga.Config{DB: &connDB{conn: conn}, Operations: []*phases.Operation{{
		Name: "two_phases",
		Steps: []phases.Step{
			phases.Atomic("first", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				_, err := tx.Exec(ctx, `SELECT 1`)
				return err
			}),
			phases.Call("call", func(ctx context.Context, run *phases.Run) error {
				calls++
				return nil
			}),
			phases.Atomic("second", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]int{"calls": calls})
			}),
		},
	}}})
	require.NoError(t, err)
	req := &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: uuid.NewString(), Method: "POST",
		Path: "/two", Body: []byte(`{}`)}
	res, err := client.Run(t.Context(), "two_phases", req)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.False(t, res.Replayed)
	again, err := client.Run(t.Context(), "two_phases", req)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.Response.Body, again.Response.Body)
	require.Equal(t, 1, calls, "the call ran once")
	k, err := client.KeyGet(t.Context(), req.Scope, req.Key)
	require.NoError(t, err)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
}

// A DB that lends no connection for a phase's transaction is refused at once.
func TestClientRefusesADBThatLendsNoConnection(t *testing.T) {
	t.Parallel()
	_, err := saga.NewClient(&saga.Config{DB: noConnDB{}, Operations: []*phases.Operation{{Name: "op",
		Steps: []phases.Step{phases.Atomic("a", func(context.Context, pgx.Tx, *phases.Run) error { return nil })}}}})
	require.ErrorContains(t, err, "Config.DB (saga_test.noConnDB) lends no connection")
}

type noConnDB struct{ saga.DB }
