package main_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestBadUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		contains string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown command asked for help", []string{"frobnicate", "--help"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"keys", "--bogus"}, "unknown flag: --bogus"},
		{"unknown root flag", []string{"--bogus"}, "unknown flag: --bogus"},
		{"bad duration", []string{"serve", "--lease", "soon"}, "--lease"},
		{"no database", []string{"migrate"}, "DATABASE_URL"},
		{"extra argument", []string{"migrate", "now"}, `unexpected argument "now"`},
		{"bad sim probability", []string{"gateway-sim", "--fail-before", "2"}, "fail-before"},
		{"bad sim pending", []string{"gateway-sim", "--pending", "-1"}, "pending"},
		{"bad sim hold", []string{"gateway-sim", "--latency-before", "-1s"}, "latency-before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireUsage(t, pgsaga(t, nil, tc.args...), tc.contains)
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"migrate", "--help"}, {"serve", "--help"}, {"worker", "--help"}, {"keys", "--help"},
		{"show", "--help"}, {"resume", "--help"}, {"gc", "--help"}, {"gateway-sim", "--help"}, {"demo", "--help"},
	} {
		r := pgsaga(t, nil, args...)
		require.Equal(t, 0, r.code, r.String())
		require.Contains(t, r.stdout, "--database-url", r.String())
		require.Empty(t, r.stderr, r.String())
	}
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	// The template is migrated: start from an empty schema so the first run has work to do.
	_, err := db.Pool.Exec(t.Context(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	require.NoError(t, err)

	first := pgsaga(t, nil, "migrate", "--database-url", db.URL)
	require.Equal(t, 0, first.code, first.String())
	require.Contains(t, first.stdout, "applied pgsaga 001_keys")
	require.Contains(t, first.stdout, "applied payments 001_tables")
	require.Contains(t, first.stdout, "applied river")

	// The second run reads the URL from the environment.
	second := pgsaga(t, []string{"DATABASE_URL=" + db.URL}, "migrate")
	require.Equal(t, 0, second.code, second.String())
	require.Equal(t, "already up to date\n", second.stdout)

	// Every pgsaga and payments version the first run applied is recorded once.
	applied := strings.Count(first.stdout, "applied pgsaga ") + strings.Count(first.stdout, "applied payments ")
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pgsaga_migration`).Scan(&n))
	require.Equal(t, applied, n)
	require.GreaterOrEqual(t, n, 10, "pgsaga 001-008, payments 001-002 at least")
}

func TestUnreachableDatabaseIsAFailure(t *testing.T) {
	t.Parallel()
	r := pgsaga(t, nil, "migrate", "--database-url", "postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	requireFailure(t, r, "error connecting to the database")
}

func TestGatewaySim(t *testing.T) {
	t.Parallel()
	p := start(t, nil, true, "gateway-sim", "--addr", "127.0.0.1:0", "--idempotency=false", "--decline-over", "100",
		"--pending", "1", "--pending-for", "300ms", "--latency-before", "250ms")
	status, _, body := httpDo(t, "GET", p.url+"/_sim/info", nil, "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"idempotency": false, "inquiry": true, "max_in_flight_ms": 250}`, string(body))

	status, _, body = httpDo(t, "POST", p.url+"/charges", nil, `{"amount": 500, "currency": "USD", "reference": "ref-1"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	var charge map[string]any
	require.NoError(t, json.Unmarshal(body, &charge))
	require.Equal(t, "pending", charge["status"])
	require.Eventually(t, func() bool {
		status, _, body := httpDo(t, "GET", p.url+"/charges/"+charge["id"].(string), nil, "")
		return status == http.StatusOK && strings.Contains(string(body), `"status":"declined"`)
	}, 10*time.Second, 50*time.Millisecond, "a pending charge turns final (declined over 100)")

	status, _, body = httpDo(t, "GET", p.url+"/_sim/ledger", nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"ref-1":1`)

	require.Equal(t, 0, p.stop(os.Interrupt), p.stderr.String())
}

func TestServe(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	p := start(t, nil, true, serveArgs(db.URL)...)
	secret := apiKey(t, db.URL, "t1", "alice").Secret
	as := bearer(secret, "")
	with := func(key string) map[string]string { return bearer(secret, key) }

	status, _, body := httpDo(t, "GET", p.ops+"/healthz", nil, "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.JSONEq(t, `{"status":"ok"}`, string(body))

	// Single-transaction endpoints: an order, completed once, replayed byte for byte.
	status, _, body = httpDo(t, "POST", p.url+"/orders", with(uuid.NewString()), `{"total": 1200}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	var order struct{ ID, Status string }
	require.NoError(t, json.Unmarshal(body, &order))
	require.Equal(t, "served", order.Status)

	key := uuid.NewString()
	status, _, first := httpDo(t, "POST", p.url+"/orders/"+order.ID+"/complete", with(key), `{}`)
	require.Equal(t, http.StatusOK, status, string(first))
	status, header, again := httpDo(t, "POST", p.url+"/orders/"+order.ID+"/complete", with(key), `{}`)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "true", header.Get("Idempotent-Replayed"))
	require.Equal(t, first, again)
	status, _, body = httpDo(t, "POST", p.url+"/orders/"+order.ID+"/complete", with(uuid.NewString()), `{}`)
	require.Equal(t, http.StatusConflict, status, string(body))
	require.Contains(t, string(body), "order_already_completed")
	status, _, body = httpDo(t, "GET", p.url+"/sales?order_id="+order.ID, as, "")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 1, strings.Count(string(body), `"order_id"`), string(body))

	// An invoice and a payment through the in-process simulator.
	status, _, body = httpDo(t, "POST", p.url+"/invoices", with(uuid.NewString()), `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	var invoice struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &invoice))
	status, _, body = httpDo(t, "POST", p.url+"/payments", with(uuid.NewString()), `{"invoice_id": "`+invoice.ID+`", "amount": 5000}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	status, _, body = httpDo(t, "GET", p.url+"/invoices/"+invoice.ID, as, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"status":"paid"`)

	// Unauthenticated, then the metrics the requests moved, on the operations address only.
	status, _, _ = httpDo(t, "POST", p.url+"/orders", map[string]string{"Idempotency-Key": uuid.NewString()}, `{"total": 1}`)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _, body = httpDo(t, "GET", p.ops+"/metrics", nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), "go_goroutines")
	require.Contains(t, string(body), `pgsaga_requests_total{operation="create_payment",outcome="executed"} 1`)
	require.Contains(t, string(body), `pgsaga_keys{state="completed"}`)
	for _, path := range []string{"/metrics", "/healthz"} {
		status, _, body = httpDo(t, "GET", p.url+path, nil, "")
		require.Equal(t, http.StatusNotFound, status, "%s is not served on the API's address", path)
		require.Contains(t, string(body), `"error":"not_found"`)
		status, _, _ = httpDo(t, "GET", p.url+path, as, "")
		require.Equal(t, http.StatusNotFound, status, "nor with an API key")
	}

	require.Equal(t, 0, p.stop(os.Interrupt), p.stderr.String())
}

func TestServeWithGatewaySim(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	gw := start(t, nil, true, "gateway-sim", "--addr", "127.0.0.1:0")
	p := start(t, nil, true, serveArgs(db.URL, "--gateway-url", gw.url)...)
	h := bearer(apiKey(t, db.URL, "t1", "alice").Secret, uuid.NewString())
	status, _, body := httpDo(t, "POST", p.url+"/invoices", h, `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	var invoice struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &invoice))
	h["Idempotency-Key"] = uuid.NewString()
	for range 2 {
		status, _, body = httpDo(t, "POST", p.url+"/payments", h, `{"invoice_id": "`+invoice.ID+`", "amount": 2000}`)
		require.Equal(t, http.StatusCreated, status, string(body))
	}
	_, _, ledger := httpDo(t, "GET", gw.url+"/_sim/ledger", nil, "")
	var l struct{ Charges []map[string]any }
	require.NoError(t, json.Unmarshal(ledger, &l))
	require.Len(t, l.Charges, 1, string(ledger))
	require.Equal(t, 0, p.stop(os.Interrupt), p.stderr.String())
}

func TestServeRefusesAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	require.NoError(t, err)
	r := pgsaga(t, nil, "serve", "--addr", "127.0.0.1:0", "--database-url", db.URL)
	requireFailure(t, r, "migrate")
}

// Every command reads the URL from --database-url-file (or $DATABASE_URL), which keeps a
// password out of the process list; a password in --database-url itself is taken with a warning
// on stderr that never repeats it.
func TestDatabaseURLFile(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	file := filepath.Join(t.TempDir(), "url")
	require.NoError(t, os.WriteFile(file, []byte("  "+db.URL+"\n"), 0o600))
	r := pgsaga(t, nil, "keys", "--json", "--database-url-file", file)
	require.Equal(t, 0, r.code, r.String())
	require.Empty(t, r.stderr)
	r = pgsaga(t, nil, "apikey", "create", "--tenant", "t1", "--actor", "alice", "--database-url-file", file)
	require.Equal(t, 0, r.code, r.String())

	requireUsage(t, pgsaga(t, nil, "keys", "--database-url", db.URL, "--database-url-file", file), "not both")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	requireUsage(t, pgsaga(t, nil, "keys", "--database-url-file", empty), "is empty")
	requireUsage(t, pgsaga(t, nil, "keys", "--database-url-file", filepath.Join(t.TempDir(), "none")), "cannot read --database-url-file")

	r = pgsaga(t, nil, "keys", "--database-url", "postgres://app:hunter2-secret@127.0.0.1:1/app?connect_timeout=1")
	require.Equal(t, 1, r.code, r.String())
	lines := r.stderrLines()
	require.Len(t, lines, 2, r.String())
	require.Equal(t, "pgsaga: warning: --database-url carries a password, which any user of this machine can read in the process list; "+
		"give the URL in $DATABASE_URL or --database-url-file instead", lines[0])
	require.NotContains(t, r.stderr, "hunter2", "the warning never repeats the password")
	r = pgsaga(t, []string{"DATABASE_URL=postgres://app:hunter2-secret@127.0.0.1:1/app?connect_timeout=1"}, "keys")
	require.NotContains(t, r.stderr, "warning", "a password in the environment is not on the command line")
}
