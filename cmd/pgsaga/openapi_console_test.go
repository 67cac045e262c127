package main_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/reconcile"
)

// operatorToken is the console's operator token in these tests (32 bytes or more).
const operatorToken = "openapi-console-token-7d2f0c9e4b1a"

// TestConsoleMatchesDocument drives `pgsaga console` through every operation of
// docs/api/console.yaml, as a script (Bearer) and as a browser (a session cookie, its CSRF
// token, forms), on keys in every state: completed, stuck, parked, over more than one page; then
// throttled sign-ins, and the database stopped.
func TestConsoleMatchesDocument(t *testing.T) {
	t.Parallel()
	d := newDroppedDB(t)
	w := d.world
	spec := loadSpec(t, "console")
	bearer := map[string]string{"Authorization": "Bearer " + operatorToken}
	html := map[string]string{"Accept": "text/html"}

	// The keys: 50 invoices and more (a second page), a stuck payment, two parked ones, and a
	// charge at the provider that no key accounts for.
	for range 50 {
		w.invoice("t1", 100)
	}
	stuck, _ := w.stuckPayment("t1", "alice")
	parked := parkPayment(t, w, "t1", "alice")
	refused := parkPayment(t, w, "t1", "alice")
	unmatchedCharge(t, w)

	p := start(t, []string{"PGSAGA_CONSOLE_TOKEN=" + operatorToken}, true,
		"console", "--addr", "127.0.0.1:0", "--insecure-http", "--database-url", d.url, "--gateway-url", w.simURL, "--log-level", "off")
	script, browser, nobody := spec.client(p.url), spec.client(p.url), spec.client(p.url)
	keyPath := func(key string) string { return "/keys/t1/alice/" + url.PathEscape(key) }

	t.Run("signing in and out", func(t *testing.T) {
		require.Equal(t, http.StatusOK, nobody.do(t, apiCall{Method: "GET", Path: "/login?next=/keys", Header: html}).Status)
		a := nobody.do(t, apiCall{Method: "POST", Path: "/login", Header: form(nil), Body: "token=wrong-token"})
		requireError(t, a, http.StatusUnauthorized, "unauthenticated")
		a = nobody.do(t, apiCall{Method: "POST", Path: "/login", Body: `["token"]`, Invalid: true})
		requireError(t, a, http.StatusBadRequest, "invalid_request")
		a = spec.client(p.url).do(t, apiCall{Method: "POST", Path: "/login", Header: form(html), Body: "token=" + operatorToken + "&next=/keys"})
		require.Equal(t, http.StatusSeeOther, a.Status)
		require.Equal(t, "/keys", a.Header.Get("Location"))

		// A script's session: the cookie, and the CSRF token its POSTs need.
		a = browser.do(t, apiCall{Method: "POST", Path: "/login", Body: `{"token": "` + operatorToken + `"}`})
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		csrf := jsonString(t, a.Body, "csrf_token")
		requireError(t, browser.do(t, apiCall{Method: "POST", Path: "/logout"}), http.StatusForbidden, "csrf_token_invalid")
		a = browser.do(t, apiCall{Method: "POST", Path: "/logout", Header: map[string]string{"X-CSRF-Token": csrf}})
		require.Equal(t, http.StatusNoContent, a.Status)
		requireError(t, browser.do(t, apiCall{Method: "GET", Path: "/", Invalid: true}), http.StatusUnauthorized, "unauthenticated")
		requireError(t, nobody.do(t, apiCall{Method: "POST", Path: "/logout", Invalid: true}), http.StatusUnauthorized, "unauthenticated")
		a = nobody.do(t, apiCall{Method: "POST", Path: "/logout", Header: html, Invalid: true})
		require.Equal(t, http.StatusSeeOther, a.Status, "a browser without a session is sent to sign in")

		// A browser signs in with the form and out with the form.
		a = browser.do(t, apiCall{Method: "POST", Path: "/login", Header: form(html), Body: "token=" + operatorToken})
		require.Equal(t, http.StatusSeeOther, a.Status)
		a = browser.do(t, apiCall{Method: "POST", Path: "/logout", Header: form(html), Body: "csrf=" + sessionCSRF(t, browser)})
		require.Equal(t, http.StatusSeeOther, a.Status)
		require.Equal(t, "/login", a.Header.Get("Location"))
	})

	t.Run("overview and pages", func(t *testing.T) {
		a := script.do(t, apiCall{Method: "GET", Path: "/", Header: bearer})
		require.Equal(t, http.StatusOK, a.Status)
		var o struct {
			Counts      struct{ Started, Completed, Failed int }
			Stuck       int
			OldestStuck *struct{ Key string } `json:"oldest_stuck"`
		}
		require.NoError(t, json.Unmarshal(a.Body, &o))
		require.Equal(t, 3, o.Stuck)
		require.Equal(t, 2, o.Counts.Failed)
		require.Equal(t, stuck, o.OldestStuck.Key)
		require.Equal(t, http.StatusOK, script.do(t, apiCall{Method: "GET", Path: "/", Header: with(bearer, "Accept", "text/html")}).Status)
		requireError(t, nobody.do(t, apiCall{Method: "GET", Path: "/", Invalid: true}), http.StatusUnauthorized, "unauthenticated")

		for file, ctype := range map[string]string{"console.css": "text/css", "icon.svg": "image/svg+xml"} {
			a := nobody.do(t, apiCall{Method: "GET", Path: "/static/" + file})
			require.Equal(t, http.StatusOK, a.Status)
			require.True(t, strings.HasPrefix(a.Header.Get("Content-Type"), ctype), a.Header.Get("Content-Type"))
		}
		require.Equal(t, http.StatusNotFound, nobody.do(t, apiCall{Method: "GET", Path: "/static/nope.js"}).Status)

		require.Equal(t, http.StatusOK, script.do(t, apiCall{Method: "GET", Path: "/river/", Header: with(bearer, "Accept", "text/html")}).Status)
		require.Equal(t, http.StatusSeeOther, nobody.do(t, apiCall{Method: "GET", Path: "/river/", Header: html, Invalid: true}).Status)
		requireError(t, nobody.do(t, apiCall{Method: "GET", Path: "/river/", Invalid: true}), http.StatusUnauthorized, "unauthenticated")
	})

	t.Run("keys, a page at a time", func(t *testing.T) {
		a := script.do(t, apiCall{Method: "GET", Path: "/keys", Header: bearer})
		require.Equal(t, http.StatusOK, a.Status)
		var page struct {
			Keys       []struct{ Key string }
			NextCursor *string `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(a.Body, &page))
		require.Len(t, page.Keys, 50)
		require.NotNil(t, page.NextCursor)
		a = script.do(t, apiCall{Method: "GET", Path: "/keys?cursor=" + url.QueryEscape(*page.NextCursor), Header: bearer})
		require.NoError(t, json.Unmarshal(a.Body, &page))
		require.NotEmpty(t, page.Keys)
		require.Nil(t, page.NextCursor, "null on the last page")

		a = script.do(t, apiCall{Method: "GET", Path: "/keys?stuck=1&state=failed&tenant=t1&operation=create_payment&q=" + parked[:8], Header: bearer})
		require.NoError(t, json.Unmarshal(a.Body, &page))
		require.Equal(t, parked, page.Keys[0].Key)
		require.Equal(t, http.StatusOK, script.do(t, apiCall{Method: "GET", Path: "/keys?stuck=1", Header: with(bearer, "Accept", "text/html")}).Status)

		requireError(t, script.do(t, apiCall{Method: "GET", Path: "/keys?state=lost", Header: bearer, Invalid: true}), http.StatusBadRequest, "invalid_request")
		requireError(t, script.do(t, apiCall{Method: "GET", Path: "/keys?cursor=not-ours", Header: bearer}), http.StatusBadRequest, "invalid_request")
		requireError(t, nobody.do(t, apiCall{Method: "GET", Path: "/keys", Invalid: true}), http.StatusUnauthorized, "unauthenticated")
	})

	t.Run("a key", func(t *testing.T) {
		a := script.do(t, apiCall{Method: "GET", Path: keyPath(parked), Header: bearer})
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		require.Equal(t, "outcome_unknown", jsonString(t, a.Body, "parked_reason"))
		require.Contains(t, string(mustField(t, a.Body, "calls")), `"outcome":"unknown"`)
		require.Equal(t, http.StatusOK, script.do(t, apiCall{Method: "GET", Path: keyPath(parked), Header: with(bearer, "Accept", "text/html")}).Status)
		requireError(t, script.do(t, apiCall{Method: "GET", Path: keyPath("no-such-key"), Header: bearer}), http.StatusNotFound, "not_found")
		requireError(t, nobody.do(t, apiCall{Method: "GET", Path: keyPath(parked), Invalid: true}), http.StatusUnauthorized, "unauthenticated")
	})

	t.Run("unmatched charges", func(t *testing.T) {
		a := script.do(t, apiCall{Method: "GET", Path: "/charges/unmatched", Header: bearer})
		require.Equal(t, http.StatusOK, a.Status)
		require.Contains(t, string(a.Body), `"amount":777`)
		require.Equal(t, http.StatusOK, script.do(t, apiCall{Method: "GET", Path: "/charges/unmatched", Header: with(bearer, "Accept", "text/html")}).Status)
		requireError(t, nobody.do(t, apiCall{Method: "GET", Path: "/charges/unmatched", Invalid: true}), http.StatusUnauthorized, "unauthenticated")
	})

	t.Run("resume", func(t *testing.T) {
		post := func(key string) apiAnswer {
			return script.do(t, apiCall{Method: "POST", Path: keyPath(key) + "/resume", Header: bearer})
		}
		// The provider still can neither be asked nor take keys: resuming parks it again.
		_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = false, false })
		require.NoError(t, err)
		requireError(t, post(parked), http.StatusConflict, "operation_parked")
		_, err = w.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = true, true })
		require.NoError(t, err)

		w.sim.FailNext(100)
		requireError(t, post(stuck), http.StatusServiceUnavailable, "temporarily_unavailable")
		w.sim.FailNext(0)
		a := post(stuck)
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		require.JSONEq(t, `201`, string(mustField(t, a.Body, "status")))
		require.Equal(t, http.StatusOK, post(stuck).Status, "a completed key answers its stored response")
		requireError(t, post("no-such-key"), http.StatusNotFound, "not_found")
		requireError(t, nobody.do(t, apiCall{Method: "POST", Path: keyPath(stuck) + "/resume", Invalid: true}), http.StatusUnauthorized, "unauthenticated")

		// A browser's form, with and without the session's CSRF token.
		a = browser.do(t, apiCall{Method: "POST", Path: "/login", Header: form(html), Body: "token=" + operatorToken})
		require.Equal(t, http.StatusSeeOther, a.Status)
		a = browser.do(t, apiCall{Method: "POST", Path: keyPath(stuck) + "/resume", Header: form(html), Body: "csrf=" + sessionCSRF(t, browser)})
		require.Equal(t, http.StatusSeeOther, a.Status)
		require.Equal(t, keyPath(stuck), a.Header.Get("Location"))
		requireError(t, browser.do(t, apiCall{Method: "POST", Path: keyPath(stuck) + "/resume", Header: form(nil), Body: "csrf=stale"}),
			http.StatusForbidden, "csrf_token_invalid")
	})

	t.Run("settle", func(t *testing.T) {
		settle := func(key, body string, invalid bool) apiAnswer {
			return script.do(t, apiCall{Method: "POST", Path: keyPath(key) + "/settle", Header: form(bearer), Body: body, Invalid: invalid})
		}
		requireError(t, settle(refused, "outcome=succeeded&note=charged", false), http.StatusUnprocessableEntity, "settle_refused")
		requireError(t, settle(refused, "outcome=maybe&note=x", true), http.StatusBadRequest, "invalid_request")
		requireError(t, settle(refused, "outcome=failed", true), http.StatusBadRequest, "invalid_request")
		a := settle(refused, "outcome=failed&note=no+charge+at+the+provider", false)
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		require.JSONEq(t, `402`, string(mustField(t, a.Body, "status")))
		requireError(t, settle(refused, "outcome=failed&note=again", false), http.StatusConflict, "not_parked")
		requireError(t, settle("no-such-key", "outcome=failed&note=x", false), http.StatusNotFound, "not_found")
		requireError(t, nobody.do(t, apiCall{Method: "POST", Path: keyPath(parked) + "/settle", Header: form(nil), Body: "outcome=failed&note=x", Invalid: true}),
			http.StatusUnauthorized, "unauthenticated")
		requireError(t, browser.do(t, apiCall{Method: "POST", Path: keyPath(parked) + "/settle", Header: form(nil), Body: "outcome=failed&note=x"}),
			http.StatusForbidden, "csrf_token_invalid")
		a = browser.do(t, apiCall{Method: "POST", Path: keyPath(parked) + "/settle", Header: form(html),
			Body: "outcome=succeeded&reference=ch_000001&note=charged+at+the+provider&csrf=" + sessionCSRF(t, browser)})
		require.Equal(t, http.StatusSeeOther, a.Status)
		a = script.do(t, apiCall{Method: "GET", Path: keyPath(parked), Header: bearer})
		require.Contains(t, string(mustField(t, a.Body, "history")), `"action":"settle"`)
	})

	t.Run("after 10 failed sign-ins, sign-ins from the address are refused with 429", func(t *testing.T) {
		// A console of its own: the block would hold this address out of the other for a minute.
		p := start(t, []string{"PGSAGA_CONSOLE_TOKEN=" + operatorToken}, true,
			"console", "--addr", "127.0.0.1:0", "--insecure-http", "--database-url", d.url, "--log-level", "off")
		c := spec.client(p.url)
		for range 10 {
			a := c.do(t, apiCall{Method: "POST", Path: "/login", Header: form(nil), Body: "token=wrong-token"})
			requireError(t, a, http.StatusUnauthorized, "unauthenticated")
		}
		for _, call := range append(authenticatedCalls(keyPath(stuck), bearer),
			apiCall{Method: "POST", Path: "/login", Header: form(nil), Body: "token=" + operatorToken}) {
			a := c.do(t, call)
			requireError(t, a, http.StatusTooManyRequests, "too_many_attempts")
			require.NotEmpty(t, a.Header.Get("Retry-After"))
		}
		require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
	})

	t.Run("with the database stopped, reads fail and actions do not finish", func(t *testing.T) {
		d.down()
		// The operators cannot be read: a token other than the environment's is not let through.
		for _, call := range append(authenticatedCalls(keyPath(stuck), map[string]string{"Authorization": "Bearer someone-elses-token"}),
			apiCall{Method: "POST", Path: "/login", Header: form(nil), Body: "token=someone-elses-token"}) {
			requireError(t, script.do(t, call), http.StatusServiceUnavailable, "temporarily_unavailable")
		}
		// The environment's token needs no database: its reads and actions meet the database gone.
		calls := []apiCall{
			{Method: "POST", Path: keyPath(parked) + "/resume", Header: bearer},
			{Method: "POST", Path: keyPath(parked) + "/settle", Header: form(bearer), Body: "outcome=failed&note=x"},
		}
		for _, path := range []string{"/", "/keys", keyPath(stuck), "/charges/unmatched"} {
			calls = append(calls, apiCall{Method: "GET", Path: path, Header: bearer})
		}
		for _, call := range calls {
			a := script.do(t, call)
			requireError(t, a, http.StatusServiceUnavailable, "temporarily_unavailable")
			require.Equal(t, "1", a.Header.Get("Retry-After"), "%s %s", call.Method, call.Path)
		}
	})

	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
	spec.requireCovered(map[string]string{
		"resumeKey 422": "the binary carries the operations of every key it made",
		// 500 is what is left when the database answered and the console still failed: no
		// request of a test makes that happen.
		"overview 500": "a failure other than the database's", "listKeys 500": "a failure other than the database's",
		"getKey 500": "a failure other than the database's", "listUnmatchedCharges 500": "a failure other than the database's",
		"resumeKey 500": "a failure other than the database's", "settleKey 500": "a failure other than the database's",
	})
}

// form is header plus the form content type.
func form(header map[string]string) map[string]string {
	return with(header, "Content-Type", "application/x-www-form-urlencoded")
}

// sessionCSRF is the CSRF token of c's session, as its pages carry it in their forms.
func sessionCSRF(t *testing.T, c *apiClient) string {
	t.Helper()
	a := c.do(t, apiCall{Method: "GET", Path: "/", Header: map[string]string{"Accept": "text/html"}})
	const field = `name="csrf" value="`
	body := string(a.Body)
	i := strings.Index(body, field)
	require.GreaterOrEqual(t, i, 0, "the page has no CSRF field:\n%s", body)
	body = body[i+len(field):]
	return body[:strings.Index(body, `"`)]
}

// parkPayment parks a payment whose outcome nothing can resolve: a gateway with neither
// inquiry nor idempotency keys charges it and loses the answer. It returns the key.
func parkPayment(t *testing.T, w *world, tenant, actor string) string {
	t.Helper()
	invoice := w.invoice(tenant, 5000)
	_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = false, false })
	require.NoError(t, err)
	defer func() {
		_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = true, true })
		require.NoError(t, err)
	}()
	w.sim.LoseNext(1)
	key := uuid.NewString()
	status, body := w.post(tenant, actor, key, "/payments", `{"invoice_id": "`+invoice+`", "amount": 2000}`)
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	require.Contains(t, string(body), "operation_parked")
	return key
}

// unmatchedCharge charges the provider with no key accounting for it (777 USD) and has a
// reconciliation store it.
func unmatchedCharge(t *testing.T, w *world) {
	t.Helper()
	_, err := w.sim.Gateway().Send(t.Context(), gateway.ChargeParams{Amount: 777, Currency: "USD", Reference: "lost-commit"})
	require.NoError(t, err)
	svc, err := payments.New(&payments.Config{Pool: w.db.Pool, Gateway: w.sim.Gateway()})
	require.NoError(t, err)
	rec, err := reconcile.New(&reconcile.Config{Client: svc.Client(), Lister: w.sim})
	require.NoError(t, err)
	_, stored, err := rec.Run(t.Context(), time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Positive(t, stored)
}

// authenticatedCalls are a request to each operation that needs authentication, with header.
func authenticatedCalls(key string, header map[string]string) []apiCall {
	return []apiCall{
		{Method: "POST", Path: "/logout", Header: header},
		{Method: "GET", Path: "/", Header: header},
		{Method: "GET", Path: "/keys", Header: header},
		{Method: "GET", Path: key, Header: header},
		{Method: "POST", Path: key + "/resume", Header: header},
		{Method: "POST", Path: key + "/settle", Header: form(header), Body: "outcome=failed&note=x"},
		{Method: "GET", Path: "/charges/unmatched", Header: header},
		{Method: "GET", Path: "/river/", Header: header},
	}
}
