package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// storedRows counts what a request may leave behind in the database: keys, invoices, payments,
// orders and sales.
func storedRows(t *testing.T, db *dbtest.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM pgsaga_key) + (SELECT count(*) FROM invoices) + (SELECT count(*) FROM payments) +
		(SELECT count(*) FROM orders) + (SELECT count(*) FROM sales)`).Scan(&n))
	return n
}

// A request without a valid API key is 401 unauthenticated, whatever else is wrong with it
// (authentication is the first check), and stores nothing: no key, no invoice, no payment.
func TestServeRefusesRequestsWithoutAValidAPIKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
	good := apiKey(t, w.db.URL, "t1", "alice")
	revoked := apiKey(t, w.db.URL, "t1", "alice")
	r := pgsaga(t, nil, "apikey", "revoke", revoked.ID, "--database-url", w.db.URL)
	require.Equal(t, 0, r.code, r.String())
	invoice := w.invoice("t1", 5000) // through the test's own server
	before := storedRows(t, w.db)

	unknown := good.Secret[:len(good.Secret)-10] + strings.Repeat("A", 10)
	otherID := "pgs_0123456789abcdef" + good.Secret[len("pgs_0123456789abcdef"):]
	for name, auth := range map[string]string{
		"no header":        "",
		"empty bearer":     "Bearer ",
		"basic":            "Basic dDE6YWxpY2U=",
		"malformed":        "Bearer pgs_nothing",
		"unknown secret":   "Bearer " + unknown,
		"another key's id": "Bearer " + otherID,
		"revoked":          "Bearer " + revoked.Secret,
		"no scheme":        good.Secret,
	} {
		t.Run(name, func(t *testing.T) {
			for _, req := range []struct{ method, path, body string }{
				{"POST", "/invoices", `{"amount": 5000, "currency": "USD"}`},
				{"POST", "/payments", `{"invoice_id": "` + invoice + `", "amount": 1000}`},
				{"POST", "/orders", `{"total": 1200}`},
				{"GET", "/invoices/" + invoice, ""},
				{"GET", "/payments?invoice_id=" + invoice, ""},
			} {
				h := map[string]string{"Idempotency-Key": uuid.NewString(), "X-Tenant-ID": "t1", "X-Actor-ID": "alice"}
				if auth != "" {
					h["Authorization"] = auth
				}
				status, _, body := httpDo(t, req.method, p.url+req.path, h, req.body)
				require.Equal(t, http.StatusUnauthorized, status, "%s %s: %s", req.method, req.path, body)
				require.Equal(t, "unauthenticated", errorCode(t, body))
				require.NotContains(t, string(body), "paid", "nothing of the invoice is read")
			}
			// Authentication answers before the Idempotency-Key and the body are looked at.
			h := map[string]string{}
			if auth != "" {
				h["Authorization"] = auth
			}
			status, _, body := httpDo(t, "POST", p.url+"/payments", h, "not json")
			require.Equal(t, http.StatusUnauthorized, status, string(body))
		})
	}
	require.Equal(t, before, storedRows(t, w.db), "nothing stored")
	require.Zero(t, w.sim.TotalCharges())

	// The same requests with the key are let in.
	status, _, body := httpDo(t, "POST", p.url+"/payments", bearer(good.Secret, uuid.NewString()), `{"invoice_id": "`+invoice+`", "amount": 1000}`)
	require.Equal(t, http.StatusCreated, status, string(body))
}

// One tenant's key cannot read or pay another tenant's invoice, nor read or complete its order:
// every route answers 404 not_found, as for an unknown id, and changes nothing.
func TestServeKeepsTenantsApart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
	owner := apiKey(t, w.db.URL, "t1", "alice").Secret
	intruder := apiKey(t, w.db.URL, "t2", "alice").Secret // the same actor name, another tenant

	status, _, body := httpDo(t, "POST", p.url+"/invoices", bearer(owner, uuid.NewString()), `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	invoice := idOf(t, body)
	status, _, body = httpDo(t, "POST", p.url+"/payments", bearer(owner, uuid.NewString()), `{"invoice_id": "`+invoice+`", "amount": 1000}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	status, _, body = httpDo(t, "POST", p.url+"/orders", bearer(owner, uuid.NewString()), `{"total": 1200}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	order := idOf(t, body)
	require.Equal(t, 1, w.sim.TotalCharges())

	notFound := func(t *testing.T, status int, body []byte) {
		t.Helper()
		require.Equal(t, http.StatusNotFound, status, string(body))
		require.Equal(t, "not_found", errorCode(t, body))
	}
	t.Run("GET /invoices/{id}", func(t *testing.T) {
		status, _, body := httpDo(t, "GET", p.url+"/invoices/"+invoice, bearer(intruder, ""), "")
		notFound(t, status, body)
		require.NotContains(t, string(body), `"amount"`)
	})
	t.Run("POST /payments", func(t *testing.T) {
		status, _, body := httpDo(t, "POST", p.url+"/payments", bearer(intruder, uuid.NewString()), `{"invoice_id": "`+invoice+`", "amount": 1000}`)
		notFound(t, status, body)
		require.Equal(t, 1, w.sim.TotalCharges(), "nothing charged against another tenant's invoice")
		require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1`, invoice))
	})
	t.Run("GET /payments?invoice_id=", func(t *testing.T) {
		status, _, body := httpDo(t, "GET", p.url+"/payments?invoice_id="+invoice, bearer(intruder, ""), "")
		notFound(t, status, body)
		require.NotContains(t, string(body), "charge_id")
	})
	t.Run("POST /orders/{id}/complete", func(t *testing.T) {
		status, _, body := httpDo(t, "POST", p.url+"/orders/"+order+"/complete", bearer(intruder, uuid.NewString()), `{}`)
		notFound(t, status, body)
		require.Zero(t, w.count(`SELECT count(*) FROM sales WHERE order_id = $1`, order), "the order was not completed")
	})
	t.Run("GET /sales?order_id=", func(t *testing.T) {
		status, _, _ := httpDo(t, "POST", p.url+"/orders/"+order+"/complete", bearer(owner, uuid.NewString()), `{}`)
		require.Equal(t, http.StatusOK, status)
		status, _, body := httpDo(t, "GET", p.url+"/sales?order_id="+order, bearer(intruder, ""), "")
		notFound(t, status, body)
		require.NotContains(t, string(body), `"total"`)
	})

	// The owner still sees everything as it was.
	status, _, body = httpDo(t, "GET", p.url+"/invoices/"+invoice, bearer(owner, ""), "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"paid":1000`)
}

// A revoke takes effect at once, in every serve process: the next request with the key is 401.
func TestAPIKeyRevokeTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	a := start(t, nil, true, serveArgs(db.URL, "--log-level", "off")...)
	b := start(t, nil, true, serveArgs(db.URL, "--log-level", "off")...)
	k := apiKey(t, db.URL, "t1", "alice")
	other := apiKey(t, db.URL, "t1", "bob")
	order := func(p *process, secret string) int {
		status, _, _ := httpDo(t, "POST", p.url+"/orders", bearer(secret, uuid.NewString()), `{"total": 100}`)
		return status
	}
	require.Equal(t, http.StatusCreated, order(a, k.Secret))
	require.Equal(t, http.StatusCreated, order(b, k.Secret))

	r := pgsaga(t, nil, "apikey", "revoke", k.ID, "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, "revoked API key "+k.ID)
	require.Equal(t, http.StatusUnauthorized, order(a, k.Secret))
	require.Equal(t, http.StatusUnauthorized, order(b, k.Secret))
	require.Equal(t, http.StatusCreated, order(a, other.Secret), "the other keys still work")

	requireFailure(t, pgsaga(t, nil, "apikey", "revoke", "0000000000000000", "--database-url", db.URL), "no API key has the id")
}

func TestAPIKeyCommands(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	first := apiKey(t, db.URL, "t1", "alice")
	require.Regexp(t, `^pgs_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$`, first.Secret)
	require.Equal(t, "t1", first.Tenant)
	require.Equal(t, "alice", first.Actor)
	require.False(t, first.CreatedAt.IsZero())
	second := apiKey(t, db.URL, "t2", "bob")

	r := pgsaga(t, nil, "apikey", "revoke", first.ID, "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	r = pgsaga(t, nil, "apikey", "list", "--json", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	require.NotContains(t, r.stdout, first.Secret[len(first.Secret)-43:], "never a secret")
	var list struct {
		APIKeys []map[string]any `json:"api_keys"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list.APIKeys, 2)
	require.Equal(t, second.ID, list.APIKeys[0]["id"], "newest first")
	require.Nil(t, list.APIKeys[0]["revoked_at"])
	require.Equal(t, first.ID, list.APIKeys[1]["id"])
	require.NotNil(t, list.APIKeys[1]["revoked_at"])
	for _, k := range list.APIKeys {
		keys := make([]string, 0, len(k))
		for name := range k {
			keys = append(keys, name)
		}
		require.ElementsMatch(t, []string{"id", "tenant", "actor", "created_at", "revoked_at"}, keys)
	}

	r = pgsaga(t, nil, "apikey", "list", "--tenant", "t2", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, second.ID)
	require.NotContains(t, r.stdout, first.ID)

	r = pgsaga(t, nil, "apikey", "create", "--tenant", "t1", "--actor", "carol", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	require.Regexp(t, `(?m)^secret +pgs_[0-9a-f]{16}_\S{43}$`, r.stdout)

	requireUsage(t, pgsaga(t, nil, "apikey", "create", "--actor", "a", "--database-url", db.URL), "--tenant")
	requireUsage(t, pgsaga(t, nil, "apikey", "create", "--tenant", strings.Repeat("t", 65), "--actor", "a", "--database-url", db.URL), "1-64")
	requireUsage(t, pgsaga(t, nil, "apikey", "revoke", "--database-url", db.URL), "ID")
}

// --insecure-scope-headers takes the scope from the headers on a loopback address, and is
// refused (exit 2, one line) on any other.
func TestInsecureScopeHeaders(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080", "example.com:8080"} {
		r := pgsaga(t, nil, "serve", "--insecure-scope-headers", "--addr", addr, "--ops-addr", "127.0.0.1:0", "--database-url", db.URL)
		requireUsage(t, r, "--insecure-scope-headers is allowed only with a loopback --addr")
	}

	p := start(t, nil, true, serveArgs(db.URL, "--insecure-scope-headers", "--log-level", "off")...)
	status, _, body := httpDo(t, "POST", p.url+"/orders",
		map[string]string{"X-Tenant-ID": "t1", "X-Actor-ID": "alice", "Idempotency-Key": uuid.NewString()}, `{"total": 100}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	for _, h := range []map[string]string{
		{"X-Tenant-ID": "t1"},
		{"X-Actor-ID": "alice"},
		{"X-Tenant-ID": strings.Repeat("t", 65), "X-Actor-ID": "alice"},
		{"Authorization": "Bearer " + apiKey(t, db.URL, "t1", "alice").Secret},
	} {
		h["Idempotency-Key"] = uuid.NewString()
		status, _, body := httpDo(t, "POST", p.url+"/orders", h, `{"total": 100}`)
		require.Equal(t, http.StatusUnauthorized, status, string(body))
		require.Equal(t, "unauthenticated", errorCode(t, body))
	}
	status, _, body = httpDo(t, "GET", p.url+"/invoices/x", nil, "")
	require.Equal(t, http.StatusUnauthorized, status, string(body))
}

func TestOperatorCommands(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	r := pgsaga(t, nil, "operator", "add", "ana", "--json", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	var added map[string]string
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &added))
	require.Equal(t, "ana", added["name"])
	require.Regexp(t, `^pgso_[A-Za-z0-9_-]{43}$`, added["token"])
	require.Len(t, added, 2)

	requireFailure(t, pgsaga(t, nil, "operator", "add", "ana", "--database-url", db.URL), "operator ana exists")
	requireUsage(t, pgsaga(t, nil, "operator", "add", "ana\x1b[2J", "--database-url", db.URL), "invalid operator name")
	r = pgsaga(t, nil, "operator", "add", "ben", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	require.Regexp(t, `(?m)^token +pgso_\S{43}$`, r.stdout)

	r = pgsaga(t, nil, "operator", "revoke", "ana", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	requireFailure(t, pgsaga(t, nil, "operator", "revoke", "nobody", "--database-url", db.URL), `no operator is named "nobody"`)
	requireFailure(t, pgsaga(t, nil, "operator", "add", "ana", "--database-url", db.URL), "stays taken")

	r = pgsaga(t, nil, "operator", "list", "--json", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	require.NotContains(t, r.stdout, added["token"])
	var list struct {
		Operators []map[string]any `json:"operators"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list.Operators, 2)
	require.Equal(t, "ana", list.Operators[0]["name"])
	require.NotNil(t, list.Operators[0]["revoked_at"])
	require.Equal(t, "ben", list.Operators[1]["name"])
	require.Nil(t, list.Operators[1]["revoked_at"])
	require.Contains(t, list.Operators[1], "created_at")
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	return e.Error
}

func idOf(t *testing.T, body []byte) string {
	t.Helper()
	var v struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	require.NotEmpty(t, v.ID)
	return v.ID
}
