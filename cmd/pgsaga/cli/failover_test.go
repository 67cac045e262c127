package cli

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// silentServer listens on a Unix socket in a new directory and accepts connections without
// ever answering, as a frozen or partitioned PostgreSQL does (its kernel accepts), until the
// test ends. It returns the directory, a "host" for a URL.
func silentServer(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgsaga-silent-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, ".s.PGSQL.5432"))
	require.NoError(t, err)
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return dir
}

// multiHost returns db's URL with a first host placed before its own, as a multi-host URL with
// target_session_attrs=read-write names a replicated pair.
func multiHost(t *testing.T, dbURL, firstHost string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	host, port := q.Get("host"), q.Get("port")
	require.NotEmpty(t, host, "dbtest's URL names a socket directory")
	if port == "" {
		port = "5432"
	}
	q.Set("host", firstHost+","+host)
	q.Set("port", "5432,"+port)
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}

// A multi-host URL whose first host is frozen (it accepts connections and never answers) still
// connects, to the next host, without a connect_timeout in the URL: each host gets its own
// bound. Without it, the whole connection attempt waited on the first host until it gave up.
func TestFrozenFirstHostIsSkipped(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	u := multiHost(t, db.URL, silentServer(t))
	begin := time.Now()
	pool, err := openPool(t.Context(), u, nil, true)
	require.NoError(t, err, "the second host answers")
	defer pool.Close()
	require.Less(t, time.Since(begin), connectTimeout, "the frozen host was given up before the ping's own deadline")
	var one int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT 1").Scan(&one))
}

// A pooled connection whose server starts refusing writes (here the session made read-only by
// default, which PostgreSQL reports to the client as a demoted or fenced primary's sessions
// would) is dropped when released, not handed out again to fail every write with 25006.
func TestReadOnlyConnectionIsDropped(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	pool, err := openPool(t.Context(), db.URL+"&pool_max_conns=1", nil, true)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(t.Context(), "CREATE TABLE t (n int)")
	require.NoError(t, err)

	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	firstPID := conn.Conn().PgConn().PID()
	_, err = conn.Exec(t.Context(), "SET default_transaction_read_only = on")
	require.NoError(t, err)
	_, err = conn.Exec(t.Context(), "INSERT INTO t VALUES (1)")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "25006", pgErr.Code)
	conn.Release()

	conn, err = pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	require.NotEqual(t, firstPID, conn.Conn().PgConn().PID(), "the read-only session was dropped")
	_, err = conn.Exec(t.Context(), "INSERT INTO t VALUES (2)")
	require.NoError(t, err, "the new session takes writes")
}

// /healthz: 200 ok on a writable database, 503 read_only on one that refuses writes (a standby
// answers the same), 503 unavailable when the server does not answer.
func TestHealthz(t *testing.T) {
	t.Parallel()
	get := func(h http.Handler) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	db := dbtest.NewDB(t)
	pool, err := openPool(t.Context(), db.URL, nil, true)
	require.NoError(t, err)
	defer pool.Close()
	code, body := get(healthz(pool))
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok"}`, body)

	ro := dbtest.NewDB(t)
	_, err = ro.Pool.Exec(t.Context(), "ALTER DATABASE "+pgx.Identifier{ro.Name}.Sanitize()+" SET default_transaction_read_only = on")
	require.NoError(t, err)
	roPool, err := openPool(t.Context(), ro.URL, nil, true)
	require.NoError(t, err)
	defer roPool.Close()
	code, body = get(healthz(roPool))
	require.Equal(t, http.StatusServiceUnavailable, code, body)
	require.JSONEq(t, `{"status":"read_only","error":"the database server refuses writes (a standby?)"}`, body)

	silent, err := newPool(t.Context(), "postgres://postgres@/x?host="+silentServer(t)+"&connect_timeout=1", nil)
	require.NoError(t, err)
	defer silent.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	healthz(silent).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil).WithContext(ctx))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.JSONEq(t, `{"status":"unavailable","error":"database unreachable"}`, rec.Body.String())
}
