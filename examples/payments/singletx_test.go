package payments_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReplayReturnsIdenticalResponse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	order := e.createOrder(alice, 1200)
	key := newKey()

	first := e.do("POST", "/orders/"+order+"/complete", alice, key, `{}`)
	require.Equal(t, http.StatusOK, first.status, string(first.body))
	require.Empty(t, first.header.Get("Idempotent-Replayed"))

	second := e.do("POST", "/orders/"+order+"/complete", alice, key, `{}`)
	require.Equal(t, first.status, second.status)
	require.Equal(t, first.body, second.body, "a replay must return the byte-identical body")
	require.Equal(t, "true", second.header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM sales WHERE order_id = $1`, order))
}

func TestKeySpellingsAreOneKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	first := e.do("POST", "/invoices", alice, key, `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, first.status)
	// The same key as an RFC 8941 string, and the same body reordered with other white space.
	second := e.do("POST", "/invoices", alice, `"`+key+`"`, `{ "currency":"USD",  "amount":5000.0 }`)
	require.Equal(t, http.StatusCreated, second.status)
	require.Equal(t, "true", second.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, second.body)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices`))
}

func TestKeyReusedWithDifferentRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	require.Equal(t, http.StatusCreated, e.do("POST", "/invoices", alice, key, `{"amount": 5000, "currency": "USD"}`).status)

	for name, tc := range map[string]struct{ path, body string }{
		"different body":                      {"/invoices", `{"amount": 6000, "currency": "USD"}`},
		"different path":                      {"/orders", `{"amount": 5000, "currency": "USD"}`},
		"different body that is also invalid": {"/invoices", `{"amount": -1}`},
	} {
		r := e.do("POST", tc.path, alice, key, tc.body)
		require.Equal(t, http.StatusUnprocessableEntity, r.status, name)
		require.Equal(t, "idempotency_key_reused", r.code(t), name)
	}
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices`))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM orders`))
}

func TestConcurrentDuplicatesMakeOneSale(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	order := e.createOrder(alice, 1200)
	key := newKey()

	var wg sync.WaitGroup
	replies := make([]*reply, 10)
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = e.do("POST", "/orders/"+order+"/complete", alice, key, `{}`)
		}()
	}
	close(start)
	wg.Wait()

	executed := 0
	for _, r := range replies {
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, r.status, string(r.body))
		if r.status == http.StatusOK && r.header.Get("Idempotent-Replayed") == "" {
			executed++
		}
		if r.status == http.StatusConflict {
			require.Equal(t, "request_in_progress", r.code(t))
		}
	}
	require.Equal(t, 1, executed)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM sales WHERE order_id = $1`, order))
}

func TestAnotherActorsKeyIsSeparate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	bob := who{alice.tenant, "bob"}
	otherTenant := who{"tenant-2", alice.actor}
	key := newKey()
	body := `{"amount": 5000, "currency": "USD"}`

	a := e.do("POST", "/invoices", alice, key, body)
	b := e.do("POST", "/invoices", bob, key, body)
	c := e.do("POST", "/invoices", otherTenant, key, body)
	for _, r := range []*reply{a, b, c} {
		require.Equal(t, http.StatusCreated, r.status)
		require.Empty(t, r.header.Get("Idempotent-Replayed"))
	}
	require.NotEqual(t, a.json(t)["id"], b.json(t)["id"])
	require.Equal(t, 3, e.count(`SELECT count(*) FROM invoices`))
	// Another tenant cannot read alice's invoice.
	require.Equal(t, http.StatusNotFound, e.do("GET", "/invoices/"+a.json(t)["id"].(string), otherTenant, "", "").status)
}

func TestStoredBusinessOutcomesReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	missing := e.do("POST", "/orders/ord_nope/complete", alice, key, `{}`)
	require.Equal(t, http.StatusNotFound, missing.status)
	require.Equal(t, "not_found", missing.code(t))
	again := e.do("POST", "/orders/ord_nope/complete", alice, key, `{}`)
	require.Equal(t, missing.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	order := e.createOrder(alice, 900)
	require.Equal(t, http.StatusOK, e.do("POST", "/orders/"+order+"/complete", alice, newKey(), `{}`).status)
	other := newKey()
	done := e.do("POST", "/orders/"+order+"/complete", alice, other, `{}`)
	require.Equal(t, http.StatusConflict, done.status)
	require.Equal(t, "order_already_completed", done.code(t))
	replay := e.do("POST", "/orders/"+order+"/complete", alice, other, `{}`)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, done.body, replay.body)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM sales`))
}

func TestBadInputIsRefusedAndNothingStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	long := strings.Repeat("k", 256)
	cases := []struct {
		name   string
		as     who
		key    string
		path   string
		body   string
		status int
		code   string
	}{
		{"no tenant", who{"", "a"}, newKey(), "/invoices", `{"amount":1,"currency":"USD"}`, 401, "unauthenticated"},
		{"no actor", who{"t", ""}, newKey(), "/invoices", `{"amount":1,"currency":"USD"}`, 401, "unauthenticated"},
		{"no key", alice, "", "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_missing"},
		{"short key", alice, "short", "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"long key", alice, long, "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"key with space", alice, `"abc defgh"`, "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"key with quote", alice, `"abcd\"efgh"`, "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"key with backslash", alice, `abcd\efgh`, "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"key non-ascii", alice, "abcdéfghij", "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"unterminated sf-string", alice, `"abcdefghij`, "/invoices", `{"amount":1,"currency":"USD"}`, 400, "idempotency_key_invalid"},
		{"not json", alice, newKey(), "/invoices", `amount=1`, 400, "invalid_json"},
		{"truncated json", alice, newKey(), "/invoices", `{"amount":1`, 400, "invalid_json"},
		{"too large", alice, newKey(), "/invoices", `{"pad":"` + strings.Repeat("x", 1<<20) + `"}`, 413, "request_too_large"},
		{"zero amount", alice, newKey(), "/invoices", `{"amount":0,"currency":"USD"}`, 400, "invalid_request"},
		{"fractional amount", alice, newKey(), "/invoices", `{"amount":1.5,"currency":"USD"}`, 400, "invalid_request"},
		{"string amount", alice, newKey(), "/invoices", `{"amount":"5","currency":"USD"}`, 400, "invalid_request"},
		{"bad currency", alice, newKey(), "/invoices", `{"amount":5,"currency":"dollars"}`, 400, "invalid_request"},
		{"array body", alice, newKey(), "/invoices", `[1,2]`, 400, "invalid_request"},
		{"negative total", alice, newKey(), "/orders", `{"total":-3}`, 400, "invalid_request"},
		{"payment without invoice", alice, newKey(), "/payments", `{"amount":5}`, 400, "invalid_request"},
	}
	for _, tc := range cases {
		r := e.do("POST", tc.path, tc.as, tc.key, tc.body)
		require.Equal(t, tc.status, r.status, "%s: %s", tc.name, r.body)
		require.Equal(t, tc.code, r.code(t), tc.name)
	}
	require.Equal(t, 0, e.count(`SELECT count(*) FROM pgsaga_key`))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM invoices`))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM orders`))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM payments`))
}

func TestUnknownRoutesAnswerJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.do("GET", "/nope", alice, "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "not_found", r.code(t))
	r = e.do("DELETE", "/invoices/inv_1", alice, "", "")
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	require.Equal(t, "method_not_allowed", r.code(t))
	require.Contains(t, r.header.Get("Allow"), "GET")
	r = e.do("GET", "/invoices/no-such-id", alice, "", "")
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "not_found", r.code(t))
}

func TestListsUnderAParent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	bob := who{"tenant-2", "bob"}
	order := e.createOrder(alice, 700)
	inv := e.createInvoice(alice, 5000)

	// A parent without children is an empty list, not a 404 and not null.
	require.JSONEq(t, `{"sales":[]}`, string(e.do("GET", "/sales?order_id="+order, alice, "", "").body))
	require.JSONEq(t, `{"payments":[]}`, string(e.do("GET", "/payments?invoice_id="+inv, alice, "", "").body))

	done := e.do("POST", "/orders/"+order+"/complete", alice, newKey(), `{}`).json(t)
	sales := e.do("GET", "/sales?order_id="+order, alice, "", "")
	require.Equal(t, http.StatusOK, sales.status)
	require.JSONEq(t, `{"sales":[{"id":"`+done["sale_id"].(string)+`","order_id":"`+order+`","total":700}]}`, string(sales.body))

	for _, path := range []string{"/sales?order_id=ord_nope", "/payments?invoice_id=inv_nope"} {
		r := e.do("GET", path, alice, "", "")
		require.Equal(t, http.StatusNotFound, r.status, path)
		require.Equal(t, "not_found", r.code(t), path)
	}
	// Another tenant's parent does not exist for bob.
	require.Equal(t, http.StatusNotFound, e.do("GET", "/sales?order_id="+order, bob, "", "").status)
	require.Equal(t, http.StatusNotFound, e.do("GET", "/payments?invoice_id="+inv, bob, "", "").status)
	for _, path := range []string{"/sales", "/payments"} {
		r := e.do("GET", path, alice, "", "")
		require.Equal(t, http.StatusBadRequest, r.status, path)
		require.Equal(t, "invalid_request", r.code(t), path)
	}
}

// TestDataTheDatabaseRefusesIs400: an invoice id holding \u0000 passes the JSON checks and
// validation, then PostgreSQL refuses it (SQLSTATE 22021). That is the client's data, not an
// outage: 400 invalid_request, never a 503 on every retry; nothing is stored, so the answer stays
// the same.
func TestDataTheDatabaseRefusesIs400(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	for range 3 {
		r := e.do("POST", "/payments", alice, key, `{"invoice_id": "a\u0000b", "amount": 100}`)
		require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
		require.Equal(t, "invalid_request", r.code(t))
	}
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_key`), "nothing is stored for a request the database refused")
	require.Zero(t, e.count(`SELECT count(*) FROM payments`))
	// The key is still free for a good request.
	inv := e.createInvoice(alice, 100)
	r := e.do("POST", "/payments", alice, key, `{"invoice_id": "`+inv+`", "amount": 100}`)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
}
