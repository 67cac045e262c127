package saga_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
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
			pool := answerLosingPool(t, db, &armed)

			op := &phases.Operation{Name: "single", Steps: []phases.Step{
				phases.Atomic("only", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					if tc.statement != "" {
						if _, err := tx.Exec(ctx, tc.statement, run.Key()); err != nil {
							return err
						}
					}
					if run.Key() != "lost-commit-0" {
						armed.Store(true) // the answer to the next write (the claim and its COMMIT) is lost
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

// TestLostCommitOfAClaimGivesTheLeaseBack: a phased key's claim commits with its first phase,
// and the COMMIT's answer is lost. The request finds the key started under its own token: it
// gives the lease back at once and answers 503, so that the client's retry takes the key over
// and finishes it (its own answer, not a replay) instead of meeting a 409 until the lease ends.
func TestLostCommitOfAClaimGivesTheLeaseBack(t *testing.T) {
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `CREATE TABLE lost_claim (k text NOT NULL)`)
	require.NoError(t, err)
	var armed atomic.Bool
	pool := answerLosingPool(t, db, &armed)
	op := &phases.Operation{Name: "phased", Steps: []phases.Step{
		phases.Atomic("reserved", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `INSERT INTO lost_claim (k) VALUES ($1)`, run.Key())
			if err == nil && run.Key() != "lost-claim-0" && !run.Resumed() {
				armed.Store(true) // the claim's COMMIT answer is lost
			}
			return err
		}),
		phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
		}),
	}}
	c, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{op}, Lease: time.Minute,
		RetryDelay: func(int) time.Duration { return 0 }})
	require.NoError(t, err)
	req := func(key string) *saga.Request {
		return &saga.Request{Scope: saga.Scope{Tenant: "t", Actor: "a"}, Key: key, Method: http.MethodPost,
			Path: "/phased", Body: []byte(`{}`)}
	}
	_, err = c.Run(t.Context(), "phased", req("lost-claim-0")) // warm-up: prepares the statements
	require.NoError(t, err)

	_, err = c.Run(t.Context(), "phased", req("lost-claim-1"))
	var te *saga.TransientError
	require.ErrorAs(t, err, &te, "the request that lost its claim's answer gives the key back (not a 409 on its own lease)")
	require.False(t, armed.Load(), "the COMMIT's answer was lost (the test's fault fired)")
	var leased bool
	require.NoError(t, db.Pool.QueryRow(t.Context(),
		`SELECT locked_until > clock_timestamp() FROM pgsaga_key WHERE key = 'lost-claim-1'`).Scan(&leased))
	require.False(t, leased, "the lease was given back at once, not left to its minute")

	res, err := c.Run(t.Context(), "phased", req("lost-claim-1"))
	require.NoError(t, err)
	require.False(t, res.Replayed, "the retry took the key over and finished it: its own answer")
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.Equal(t, 2, countRows(t, db, `SELECT count(*) FROM lost_claim`), "each key's first phase committed once")
}

// answerLosingPool is a one-connection pool on db whose connection loses the answer to the
// next write once armed is set.
func answerLosingPool(t *testing.T, db *dbtest.DB, armed *atomic.Bool) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1 // the warm-up prepares the statements on the connection that loses the answer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &answerLosingConn{Conn: c, armed: armed}, nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// answerLosingConn passes everything through until armed; then the next write goes to the
// server (the step has run its statements: that write is the claim with the COMMIT), the server
// commits and answers, and the answer is lost on its way: the read of it fails and closes the
// connection. The client never hears of the commit.
type answerLosingConn struct {
	net.Conn
	armed *atomic.Bool
	lose  atomic.Bool
}

func (c *answerLosingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil && c.armed.CompareAndSwap(true, false) {
		c.lose.Store(true)
	}
	return n, err
}

// readyForQuery is the server's ReadyForQuery message, which ends its answer to a pipeline (its
// status byte follows): the server sends it once the COMMIT (or the implicit transaction) is
// done.
var readyForQuery = []byte{'Z', 0, 0, 0, 5}

func (c *answerLosingConn) Read(p []byte) (int, error) {
	if !c.lose.Load() {
		return c.Conn.Read(p)
	}
	// Wait for the whole answer, so the commit has happened (as when the answer is lost in the
	// network rather than the request), then lose it.
	var answer []byte
	for !bytes.Contains(answer, readyForQuery) {
		n, err := c.Conn.Read(p)
		answer = append(answer, p[:n]...)
		if err != nil {
			break
		}
	}
	_ = c.Conn.Close()
	return 0, errors.New("test: the answer to the COMMIT was lost")
}

func countRows(t *testing.T, db *dbtest.DB, sql string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), sql).Scan(&n))
	return n
}
