package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/internal/console"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/saga"
)

// TestSettleSucceeded: a script settles a parked payment as succeeded with the provider's
// charge: the answer is the stored response, the key is completed with the decision in its
// history (by the token's operator), the payment is recorded with that charge, and the client's retry
// replays the 201.
func TestSettleSucceeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	inv, key := e.parkedPayment(alice)
	charge := e.sim.Ledger().Charges[0].ID
	path := keyPath(alice, key) + "/settle"

	r := e.do(req{method: "POST", path: path, bearer: token, form: url.Values{"outcome": {"succeeded"}, "note": {"found it at the provider"}}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Equal(t, "settle_refused", r.json(t)["error"])
	require.Contains(t, r.json(t)["message"], "reference")
	require.Equal(t, saga.KeyStatusParked, e.key(alice, key).Status, "a refused settlement changes nothing")

	r = e.do(req{method: "POST", path: path, bearer: token,
		form: url.Values{"outcome": {"succeeded"}, "note": {"found it at the provider"}, "reference": {charge}}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	got := r.json(t)
	require.Equal(t, []string{"body", "status"}, sortedKeys(got))
	require.Equal(t, 201.0, got["status"])
	body := got["body"].(map[string]any)
	require.Equal(t, "succeeded", body["status"])
	require.Equal(t, charge, body["charge_id"])

	k := e.key(alice, key)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Len(t, k.History, 1)
	require.Equal(t, tokenOperator, k.History[0].By)
	require.Equal(t, saga.KeyActionSettle, k.History[0].Action)
	require.EqualValues(t, "succeeded", k.History[0].Outcome)
	require.Equal(t, charge, k.History[0].Reference)
	require.Equal(t, "found it at the provider", k.History[0].Note)

	payments := e.apiGet(alice, "/payments?invoice_id="+inv)["payments"].([]any)
	require.Len(t, payments, 1)
	require.Equal(t, "succeeded", payments[0].(map[string]any)["status"])
	require.Equal(t, 2000.0, e.apiGet(alice, "/invoices/"+inv)["paid"])
	status, replay := e.apiPost(alice, "/payments", key, paymentBody(inv, 2000))
	require.Equal(t, http.StatusCreated, status)
	require.JSONEq(t, string(mustJSON(t, body)), string(replay))
	require.Equal(t, 1, e.sim.ChargesFor("payment:"+body["id"].(string)), "settling sends nothing")

	again := e.do(req{method: "POST", path: path, bearer: token, form: url.Values{"outcome": {"failed"}, "note": {"twice"}}})
	require.Equal(t, http.StatusConflict, again.status)
	require.Equal(t, "not_parked", again.json(t)["error"])
}

// TestSettleFailedInBrowser: a browser's settle form (a cookie session with its CSRF token) is
// sent back to the key's page (303), which shows the outcome once, the stored 402 and the
// history. The payment is failed and its reservation released.
func TestSettleFailedInBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	inv, key := e.parkedPayment(alice)
	ck, _ := e.login()
	page := e.do(req{path: keyPath(alice, key), cookie: ck, accept: browserAccept})
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), `action="`+keyPath(alice, key)+`/settle"`)
	csrf := csrfOf(t, page.body)

	r := e.do(req{method: "POST", path: keyPath(alice, key) + "/settle", cookie: ck, accept: browserAccept,
		form: url.Values{"csrf": {csrf}, "outcome": {"failed"}, "note": {"provider shows no charge"}}})
	require.Equal(t, http.StatusSeeOther, r.status, string(r.body))
	require.Equal(t, keyPath(alice, key), r.header.Get("Location"))

	page = e.do(req{path: keyPath(alice, key), cookie: ck, accept: browserAccept})
	html := string(page.body)
	require.Contains(t, html, "Settled as failed: its stored response is 402 Payment Required.")
	require.Contains(t, html, "payment_failed")
	require.Regexp(t, `<td>admin</td><td>settle</td>`, html)
	require.NotContains(t, html, `/settle"`, "a completed key has no settle form")
	again := e.do(req{path: keyPath(alice, key), cookie: ck, accept: browserAccept})
	require.NotContains(t, string(again.body), "Settled as failed", "the message shows once")

	payments := e.apiGet(alice, "/payments?invoice_id="+inv)["payments"].([]any)
	require.Equal(t, "failed", payments[0].(map[string]any)["status"])
	require.Equal(t, 0.0, e.apiGet(alice, "/invoices/"+inv)["paid"])
	// The reservation is back: the whole invoice can be paid.
	e.payment(alice, inv, 5000, http.StatusCreated)
}

// TestSettleRefusals: bad input is 400 before anything runs; refusals answer as a script
// expects, and a browser sees them on the key's page.
func TestSettleRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	_, parked := e.parkedPayment(alice)
	_, stuck := e.stuckPayment(alice)
	path := keyPath(alice, parked) + "/settle"
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"note": {"x"}}, "outcome must be succeeded or failed"},
		{url.Values{"outcome": {"maybe"}, "note": {"x"}}, "outcome must be succeeded or failed"},
		{url.Values{"outcome": {"failed"}}, "a note is required"},
		{url.Values{"outcome": {"failed"}, "note": {"   "}}, "a note is required"},
		{url.Values{"outcome": {"failed"}, "note": {strings.Repeat("n", 2001)}}, "longer than 2000"},
		{url.Values{"outcome": {"failed"}, "note": {"a\x00b"}}, "without NUL"},
	} {
		r := e.do(req{method: "POST", path: path, bearer: token, form: tc.form})
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", tc.form, r.body)
		require.Equal(t, "invalid_request", r.json(t)["error"])
		require.Contains(t, r.json(t)["message"], tc.want)
	}
	require.Equal(t, saga.KeyStatusParked, e.key(alice, parked).Status)

	settle := url.Values{"outcome": {"failed"}, "note": {"x"}}
	r := e.do(req{method: "POST", path: keyPath(alice, stuck) + "/settle", bearer: token, form: settle})
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "not_parked", r.json(t)["error"])

	r = e.do(req{method: "POST", path: keyPath(alice, "no-such-key") + "/settle", bearer: token, form: settle})
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "not_found", r.json(t)["error"])

	// A JSON body works as well as a form.
	r = e.do(req{method: "POST", path: path, bearer: token, header: http.Header{"Content-Type": {"application/json"}}})
	require.Equal(t, http.StatusBadRequest, r.status)
	ck, csrf := e.login()
	r = e.do(req{method: "POST", path: keyPath(alice, stuck) + "/settle", cookie: ck, accept: browserAccept,
		form: url.Values{"csrf": {csrf}, "outcome": {"failed"}, "note": {"x"}}})
	require.Equal(t, http.StatusSeeOther, r.status)
	page := e.do(req{path: keyPath(alice, stuck), cookie: ck, accept: browserAccept})
	require.Contains(t, string(page.body), `class="flash bad"`)
	require.Contains(t, string(page.body), "Not settled: only a parked key can be settled")
}

// TestResume: Resume finishes a stuck payment once the gateway is back, recorded in the
// history as by console; resuming a completed key changes nothing; a parked key whose outcome
// nothing can resolve is resumed and parks again without charging.
func TestResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	inv, stuck := e.stuckPayment(alice)
	r := e.do(req{method: "POST", path: keyPath(alice, stuck) + "/resume", bearer: token})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, 201.0, r.json(t)["status"])
	k := e.key(alice, stuck)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Len(t, k.History, 1)
	require.Equal(t, tokenOperator, k.History[0].By)
	require.Equal(t, saga.KeyActionResume, k.History[0].Action)
	require.Equal(t, 2000.0, e.apiGet(alice, "/invoices/"+inv)["paid"])

	r = e.do(req{method: "POST", path: keyPath(alice, stuck) + "/resume", bearer: token})
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, 201.0, r.json(t)["status"], "a completed key answers its stored response")
	require.Len(t, e.key(alice, stuck).History, 1, "and nothing ran")

	_, parked := e.parkedPayment(alice)
	noInquiry := func(on bool) {
		_, err := e.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = on, on })
		require.NoError(t, err)
	}
	noInquiry(false)
	charges := e.sim.TotalCharges()
	ck, csrf := e.login()
	r = e.do(req{method: "POST", path: keyPath(alice, parked) + "/resume", cookie: ck, accept: browserAccept, form: url.Values{"csrf": {csrf}}})
	require.Equal(t, http.StatusSeeOther, r.status)
	page := e.do(req{path: keyPath(alice, parked), cookie: ck, accept: browserAccept})
	require.Contains(t, string(page.body), "Resumed, and parked again")
	require.Equal(t, charges, e.sim.TotalCharges(), "a payment that may have been charged is never charged again")
	r = e.do(req{method: "POST", path: keyPath(alice, parked) + "/resume", bearer: token})
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, "operation_parked", r.json(t)["error"])

	// Once the provider answers inquiries, a resume finds the lost charge and records it.
	noInquiry(true)
	r = e.do(req{method: "POST", path: keyPath(alice, parked) + "/resume", bearer: token})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, 201.0, r.json(t)["status"])
	require.Equal(t, charges, e.sim.TotalCharges())
	require.Len(t, e.key(alice, parked).History, 3, "three resumes by console")

	r = e.do(req{method: "POST", path: keyPath(alice, "no-such-key") + "/resume", bearer: token})
	require.Equal(t, http.StatusNotFound, r.status)
}

func sortedKeys(m map[string]any) []string {
	out := keys(m)
	slices.Sort(out)
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestKeyOfAnotherOperation: a console whose client does not run the key's operation shows the
// key and refuses to act on it, changing nothing.
func TestKeyOfAnotherOperation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	_, parked := e.parkedPayment(alice)
	before := e.key(alice, parked)
	reader, err := saga.NewClient(&saga.Config{DB: e.db.Pool})
	require.NoError(t, err)
	c, err := console.New(&console.Config{Client: reader, Token: token})
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	e.console = srv

	page := e.do(req{path: keyPath(alice, parked), bearer: token, accept: browserAccept})
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), "does not run the operation")
	require.NotContains(t, string(page.body), `/resume"`)
	for _, action := range []string{"/resume", "/settle"} {
		r := e.do(req{method: "POST", path: keyPath(alice, parked) + action, bearer: token,
			form: url.Values{"outcome": {"failed"}, "note": {"x"}}})
		require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
		require.Equal(t, "unknown_operation", r.json(t)["error"])
	}
	k := e.key(alice, parked)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, before.Attempts, k.Attempts, "nothing ran")
	require.Equal(t, before.UpdatedAt, k.UpdatedAt)
}
