package main_test

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// A worker started while PostgreSQL is down waits for it and then resumes a stuck key; serve
// and worker started on it ride out a restart while they run: /healthz answers 503 while the
// database is away and 200 when it is back, requests are answered again, the worker still
// resumes keys, and neither process exits.
func TestServeAndWorkerRideOutADatabaseRestart(t *testing.T) {
	t.Parallel()
	cluster, err := pglocal.Start(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })
	url := cluster.URL("postgres")
	r := pgsaga(t, nil, "migrate", "--database-url", url)
	require.Equal(t, 0, r.code, r.String())
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	w := newWorldOn(t, &dbtest.DB{URL: url, Pool: pool})
	completed := func(key string) bool {
		var status string
		err := pool.QueryRow(t.Context(), `SELECT status FROM pgsaga_key WHERE key = $1`, key).Scan(&status)
		return err == nil && status == "completed"
	}
	// restart brings the database back; the test's own pool drops the connections the restart
	// broke, as the binary's pools do on their own (a test query must not be the one that fails).
	restart := func() {
		require.NoError(t, cluster.Restart(t.Context()))
		pool.Reset()
	}

	// The worker starts while the database is down.
	stuck, _ := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, stuck)
	require.NoError(t, cluster.Halt())
	worker := start(t, nil, false, "worker", "--database-url", url, "--gateway-url", w.simURL,
		"--sweep-interval", "100ms", "--metrics-addr", "127.0.0.1:0")
	waitUntil(t, 20*time.Second, "the worker to log a failed attempt", func() bool {
		return strings.Count(worker.stderr.String(), "database unavailable, retrying") >= 2
	})
	restart()
	worker.waitURL(30 * time.Second)
	waitUntil(t, 60*time.Second, "the worker to resume the key once the database is back", func() bool { return completed(stuck) })
	require.Equal(t, 1, w.sim.TotalCharges())

	// serve and worker running; the database restarts under them.
	serve := start(t, nil, true, serveArgs(url, "--gateway-url", w.simURL)...)
	invoice := w.invoice("t1", 50000)
	secret := apiKey(t, url, "t1", "bob").Secret
	pay := func(key string) (int, []byte) {
		status, _, body := httpDo(t, "POST", serve.url+"/payments", bearer(secret, key),
			`{"invoice_id": "`+invoice+`", "amount": 1000}`)
		return status, body
	}
	status, body := pay(uuid.NewString())
	require.Equal(t, http.StatusCreated, status, string(body))

	require.NoError(t, cluster.Halt())
	status, _, body = httpDo(t, "GET", serve.ops+"/healthz", nil, "")
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	require.JSONEq(t, `{"status":"unavailable","error":"database unreachable"}`, string(body))
	status, body = pay(uuid.NewString())
	require.Equal(t, http.StatusServiceUnavailable, status, "no database: %s", body)
	require.Contains(t, string(body), `"error":"temporarily_unavailable"`, "a key that cannot be checked now is not a wrong key")

	restart()
	waitUntil(t, 30*time.Second, "/healthz to answer 200 again", func() bool {
		status, _, _ := httpDo(t, "GET", serve.ops+"/healthz", nil, "")
		return status == http.StatusOK
	})
	// A client retries its key until it gets a definite answer, as clients do.
	key := uuid.NewString()
	waitUntil(t, 30*time.Second, "a payment to succeed after the restart", func() bool {
		status, _ := pay(key)
		return status == http.StatusCreated
	})
	stuck, _ = w.stuckPayment("t1", "carol")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, stuck)
	waitUntil(t, 60*time.Second, "the worker to resume a key after the restart", func() bool { return completed(stuck) })
	status, _, _ = httpDo(t, "GET", worker.url+"/healthz", nil, "")
	require.Equal(t, http.StatusOK, status)

	require.Equal(t, 0, serve.stop(syscall.SIGTERM), serve.stderr.String())
	require.Equal(t, 0, worker.stop(syscall.SIGTERM), worker.stderr.String())
}

// When the database stays away longer than --db-wait, serve and worker exit 1 with one line.
func TestDBWaitGivesUp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0"}, {"worker"}} {
		begin := time.Now()
		r := pgsaga(t, nil, append(args, "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2",
			"--db-wait", "1500ms", "--log-level", "off")...)
		requireFailure(t, r, "still unavailable after waiting 1.5s: see --db-wait")
		require.Contains(t, r.stderr, "error connecting to the database")
		require.GreaterOrEqual(t, time.Since(begin), 1500*time.Millisecond)
	}
	// Logged at info: one line per failed attempt before the error.
	r := pgsaga(t, nil, "worker", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2", "--db-wait", "1s")
	require.Equal(t, 1, r.code, r.String())
	lines := r.stderrLines()
	require.GreaterOrEqual(t, len(lines), 3, r.String())
	for _, l := range lines[:len(lines)-1] {
		require.Contains(t, l, "level=INFO msg=\"database unavailable, retrying\" attempt=")
	}
	require.Contains(t, lines[len(lines)-1], "pgsaga worker: error connecting to the database")
}
