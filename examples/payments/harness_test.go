package payments_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

// env is one test's service: its own database, an in-process simulator, a real HTTP server.
type env struct {
	t   *testing.T
	db  *dbtest.DB
	sim *sim.Simulator
	svc *payments.Service
	srv *httptest.Server
}

func newEnv(t *testing.T, cfg *payments.Config) *env {
	t.Helper()
	db := dbtest.NewDB(t)
	s := sim.New(nil)
	if cfg == nil {
		cfg = &payments.Config{}
	}
	cfg.Pool = db.Pool
	if cfg.Gateway == nil {
		cfg.Gateway = s.Gateway()
	}
	svc, err := payments.New(cfg)
	require.NoError(t, err)
	h, err := svc.Handler(saga.HeaderScope)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, db: db, sim: s, svc: svc, srv: srv}
}

type who struct{ tenant, actor string }

var alice = who{"tenant-1", "alice"}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r *reply) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

func (r *reply) code(t *testing.T) string {
	t.Helper()
	code, _ := r.json(t)["error"].(string)
	return code
}

// do sends a request; key "" sends no Idempotency-Key header.
func (e *env) do(method, path string, as who, key string, body string) *reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewBufferString(body))
	require.NoError(e.t, err)
	if as.tenant != "" {
		req.Header.Set("X-Tenant-ID", as.tenant)
	}
	if as.actor != "" {
		req.Header.Set("X-Actor-ID", as.actor)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func newKey() string { return uuid.NewString() }

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	require.NoError(e.t, e.db.Pool.QueryRow(e.t.Context(), sql, args...).Scan(&n))
	return n
}

func (e *env) createOrder(as who, total int) string {
	e.t.Helper()
	r := e.do("POST", "/orders", as, newKey(), `{"total": `+itoa(total)+`}`)
	require.Equal(e.t, http.StatusCreated, r.status, string(r.body))
	return r.json(e.t)["id"].(string)
}

func (e *env) createInvoice(as who, amount int) string {
	e.t.Helper()
	r := e.do("POST", "/invoices", as, newKey(), `{"amount": `+itoa(amount)+`, "currency": "USD"}`)
	require.Equal(e.t, http.StatusCreated, r.status, string(r.body))
	return r.json(e.t)["id"].(string)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
