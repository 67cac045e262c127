package saga_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestLostCommitIsNotAReplay: a first request's COMMIT reaches the database and commits, but its
// answer never comes back (a chaos run found it: the database paused past the request's deadline
// while the COMMIT waited in its socket). The request reads the key back and finds it completed
// by its own commit: that is the answer it executed, never Idempotent-Replayed. A duplicate that
// arrives afterwards is the replay.
func TestLostCommitIsNotAReplay(t *testing.T) {
	for _, tc := range []struct {
		name string
		// statement is the phase's business statement; none makes the phase statement-free.
		statement string
	}{
		{name: "a phase with a statement", statement: `INSERT INTO lost_commit (k) VALUES ($1)`},
		{name: "a phase without statements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := dbtest.NewDB(t)
			_, err := db.Pool.Exec(t.Context(), `CREATE TABLE lost_commit (k text NOT NULL)`)
			require.NoError(t, err)

			var armed atomic.Bool
			cfg, err := pgxpool.ParseConfig(db.URL)
			require.NoError(t, err)
			cfg.MaxConns = 1 // the warm-up prepares the statements on the connection that loses the answer
			cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &answerLosingConn{Conn: c, armed: &armed}, nil
			}
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)

			op := &phases.Operation{Name: "single", Steps: []phases.Step{
				phases.Atomic("only", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					if tc.statement != "" {
						if _, err := tx.Exec(ctx, tc.statement, run.Key()); err != nil {
							return err
						}
					}
					if run.Key() != "lost-commit-0" {
						armed.Store(true) // the next COMMIT's answer is lost
					}
					return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
				}),
			}}
			c, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{op}})
			require.NoError(t, err)
			req := func(key string) *saga.Request {
				return &saga.Request{Scope: saga.Scope{Tenant: "t", Actor: "a"}, Key: key, Method: http.MethodPost,
					Path: "/single", Body: []byte(`{}`)}
			}
			_, err = c.Run(t.Context(), "single", req("lost-commit-0")) // warm-up: prepares the statements
			require.NoError(t, err)

			res, err := c.Run(t.Context(), "single", req("lost-commit-1"))
			require.NoError(t, err, "the key was stored by this request's own commit")
			require.False(t, res.Replayed, "the request whose commit stored the key is not a replay")
			require.Equal(t, http.StatusCreated, res.Response.Status)
			require.False(t, armed.Load(), "the COMMIT's answer was lost (the test's fault fired)")

			if tc.statement != "" {
				require.Equal(t, 2, countRows(t, db, `SELECT count(*) FROM lost_commit`), "each phase committed once")
			}
			again, err := c.Run(t.Context(), "single", req("lost-commit-1"))
			require.NoError(t, err)
			require.True(t, again.Replayed, "a later duplicate is a replay")
			require.Equal(t, res.Response.Body, again.Response.Body)
		})
	}
}

// answerLosingConn passes everything through until armed; then, once a write carrying a COMMIT
// has gone to the server, the next read fails and the connection closes: the server commits,
// the client never hears it.
type answerLosingConn struct {
	net.Conn
	armed *atomic.Bool
	lose  atomic.Bool
}

func (c *answerLosingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil && c.armed.Load() && bytes.Contains(p, []byte("commit")) {
		c.armed.Store(false)
		c.lose.Store(true)
	}
	return n, err
}

func (c *answerLosingConn) Read(p []byte) (int, error) {
	if c.lose.Load() {
		_ = c.Conn.Close()
		return 0, errors.New("test: the answer to the COMMIT was lost")
	}
	return c.Conn.Read(p)
}

func countRows(t *testing.T, db *dbtest.DB, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), sql).Scan(&n))
	return n
}
