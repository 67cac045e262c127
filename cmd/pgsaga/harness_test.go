package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

// world is a test's database with the payments service running in the test process, against a
// simulator the test controls, also served over HTTP for the binary's --gateway-url.
type world struct {
	t      *testing.T
	db     *dbtest.DB
	sim    *sim.Simulator
	simURL string
	api    *httptest.Server
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldOn(t, dbtest.NewDB(t))
}

// newWorldOn is newWorld on a database of the test's own, migrated with the payments tables.
func newWorldOn(t *testing.T, db *dbtest.DB) *world {
	t.Helper()
	s := sim.New(nil)
	simSrv := httptest.NewServer(s.Handler())
	t.Cleanup(simSrv.Close)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: s.Gateway(), GatewayRetries: 1})
	require.NoError(t, err)
	h, err := svc.Handler(saga.HeaderScope)
	require.NoError(t, err)
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)
	return &world{t: t, db: db, sim: s, simURL: simSrv.URL, api: api}
}

// post sends a POST as (tenant, actor) with key and returns status and body.
func (w *world) post(tenant, actor, key, path, body string) (int, []byte) {
	w.t.Helper()
	status, _, b := httpDo(w.t, "POST", w.api.URL+path,
		map[string]string{"X-Tenant-ID": tenant, "X-Actor-ID": actor, "Idempotency-Key": key}, body)
	return status, b
}

// invoice creates an invoice of amount for tenant and returns its id.
func (w *world) invoice(tenant string, amount int) string {
	w.t.Helper()
	status, body := w.post(tenant, "alice", uuid.NewString(), "/invoices", `{"amount": `+itoa(amount)+`, "currency": "USD"}`)
	require.Equal(w.t, http.StatusCreated, status, string(body))
	var inv struct{ ID string }
	require.NoError(w.t, json.Unmarshal(body, &inv))
	return inv.ID
}

// stuckPayment makes a payment whose charge fails: its key stays started, lease released.
func (w *world) stuckPayment(tenant, actor string) (key, invoiceID string) {
	w.t.Helper()
	invoiceID = w.invoice(tenant, 5000)
	key = uuid.NewString()
	w.sim.FailNext(100)
	defer w.sim.FailNext(0)
	status, body := w.post(tenant, actor, key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(w.t, http.StatusServiceUnavailable, status, string(body))
	return key, invoiceID
}

func (w *world) exec(sql string, args ...any) {
	w.t.Helper()
	_, err := w.db.Pool.Exec(w.t.Context(), sql, args...)
	require.NoError(w.t, err)
}

func (w *world) count(sql string, args ...any) int {
	w.t.Helper()
	var n int
	require.NoError(w.t, w.db.Pool.QueryRow(w.t.Context(), sql, args...).Scan(&n))
	return n
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// serveArgs are the arguments of a serve on the database at dbURL with both its API and its
// operations listener on free ports, then extra.
func serveArgs(dbURL string, extra ...string) []string {
	return append([]string{"serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--database-url", dbURL}, extra...)
}

// apiKey creates an API key for (tenant, actor) with the binary and returns it.
func apiKey(t *testing.T, dbURL, tenant, actor string) createdKey {
	t.Helper()
	r := pgsaga(t, nil, "apikey", "create", "--tenant", tenant, "--actor", actor, "--json", "--database-url", dbURL)
	require.Equal(t, 0, r.code, r.String())
	var k createdKey
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &k), r.stdout)
	return k
}

// createdKey is what `apikey create --json` prints.
type createdKey struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Actor     string    `json:"actor"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
}

// bearer are the headers of a request authenticated by secret, with an Idempotency-Key when key
// is not empty.
func bearer(secret, key string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + secret}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return h
}
