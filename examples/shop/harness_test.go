package shop_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/shop"
	"github.com/pgsaga/pgsaga/gateway/effectsim"
	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/gateway/sms/smssim"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/gateway/webhook/webhooksim"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// env is one test's shop: its own database, an in-process SMS provider (no keys, inquiry), a
// partner endpoint over HTTP, and the shop's API on a real HTTP server.
type env struct {
	t       *testing.T
	db      *sagatest.DB
	sms     *effectsim.Simulator[sms.Params, sms.Message]
	partner *webhooksim.Partner
	svc     *shop.Service
	handler http.Handler
	srv     *httptest.Server
}

func newEnv(t *testing.T, change func(*shop.Config)) *env {
	t.Helper()
	e := &env{t: t, db: sagatest.NewDB(t), sms: smssim.New(nil), partner: webhooksim.New(nil)}
	partnerSrv := httptest.NewServer(e.partner)
	t.Cleanup(partnerSrv.Close)
	partner, err := webhook.New(&webhook.Config{URL: partnerSrv.URL})
	require.NoError(t, err)
	cfg := &shop.Config{Pool: e.db.Pool, SMS: e.sms, Partner: partner}
	if change != nil {
		change(cfg)
	}
	e.svc, err = shop.New(cfg)
	require.NoError(t, err)
	e.handler, err = e.svc.Handler(saga.HeaderScope)
	require.NoError(t, err)
	e.srv = httptest.NewServer(e.handler)
	t.Cleanup(e.srv.Close)
	return e
}

type who struct{ tenant, actor string }

var (
	till  = who{"corner-shop", "till-1"}
	other = who{"other-shop", "till-1"}
)

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

// do sends a request to the shop; key "" sends no Idempotency-Key header.
func (e *env) do(method, path string, as who, key, body string) *reply {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewBufferString(body))
	require.NoError(e.t, err)
	req.Header.Set("X-Tenant-ID", as.tenant)
	req.Header.Set("X-Actor-ID", as.actor)
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

// setPrice puts sku on the price list at price.
func (e *env) setPrice(as who, sku string, price int) {
	e.t.Helper()
	r := e.do("PUT", "/products/"+sku, as, "", `{"price": `+strconv.Itoa(price)+`}`)
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
}

func orderBody(sku string, quantity, unitPrice int) string {
	return `{"sku":"` + sku + `","quantity":` + strconv.Itoa(quantity) + `,"unit_price":` + strconv.Itoa(unitPrice) +
		`,"phone":"+14155550100"}`
}

// acceptedOrder submits an order at the list price and returns its id.
func (e *env) acceptedOrder(as who, sku string) string {
	e.t.Helper()
	e.setPrice(as, sku, 450)
	r := e.do("POST", "/orders", as, newKey(), orderBody(sku, 2, 450))
	require.Equal(e.t, http.StatusCreated, r.status, string(r.body))
	return r.json(e.t)["id"].(string)
}

// events counts the outbox events of type typ with id.
func (e *env) events(typ, id string) int {
	e.t.Helper()
	return e.count(`SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox'
		AND args->'event'->>'type' = $1 AND args->'event'->>'id' = $2`, typ, id)
}

// shipReference is the downstream reference ship_order's call step sends for key.
func shipReference(as who, key, step string) string {
	return phases.DefaultReference(as.tenant, as.actor, key, shop.OpShipOrder, step)
}
