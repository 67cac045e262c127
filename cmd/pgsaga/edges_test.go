package main_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/worker"
)

// A signed webhook's event id must be valid UTF-8 without control characters: a NUL would be
// refused by the database on every redelivery (503 for ever), and invalid UTF-8 would be kept
// as U+FFFD, so two ids that differ only there would be one event and the second dropped. Such
// ids are 400 invalid_event_id; any other id, whatever its script, is received once.
func TestWebhookEventIDs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, []string{"PGSAGA_WEBHOOK_SECRET_SHOP=" + webhookSecret}, true,
		serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
	deliver := func(event string) (int, []byte) {
		t.Helper()
		sig := worker.SignWebhook(time.Now(), []byte(event), []byte(webhookSecret))
		status, _, body := httpDo(t, "POST", p.url+"/webhooks/shop", map[string]string{"Pgsaga-Signature": sig}, event)
		return status, body
	}
	for _, id := range []string{`"evt\u0000nul"`, `"evt\u0001ctl"`, "\"evt\x7fdel\"", `"evt\u0085next-line"`,
		"\"evt\xffbad\"", "\"evt\xfebad\"", `"evt\ud800lone"`, "\"evt\uFFFDreplacement\""} {
		status, body := deliver(`{"id":` + id + `,"type":"t"}`)
		require.Equal(t, http.StatusBadRequest, status, "id %q: %s", id, body)
		require.Equal(t, "invalid_event_id", jsonString(t, body, "error"), "id %q", id)
	}
	require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_inbox`), "nothing reached the inbox")
	for _, id := range []string{"evt_1", "évènement-2", "事件-3", "evt 4 with spaces"} {
		status, body := deliver(`{"id":"` + id + `","type":"t"}`)
		require.Equal(t, http.StatusOK, status, "id %q: %s", id, body)
		require.Equal(t, "true", string(mustField(t, body, "applied")), "id %q", id)
	}
}

// Unknown ids answer 404 not_found whatever their shape: a NUL, invalid UTF-8, 3,000
// characters, in a path or a query, for a read and for an operation, which stores its 404 (but
// for a path too long for the key table, which it answers without storing).
func TestUnknownIDsOfAnyShapeAre404(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
	as := bearer(apiKey(t, w.db.URL, "t1", "alice").Secret, "")
	long := strings.Repeat("a", 3000)
	for _, id := range []string{"%00", "%ff", "a%00b", "%c3%28", long, "no%2Fsuch", "%20"} {
		for _, path := range []string{"/invoices/" + id, "/payments?invoice_id=" + id, "/sales?order_id=" + id} {
			status, _, body := httpDo(t, "GET", p.url+path, as, "")
			require.Equal(t, http.StatusNotFound, status, "GET %.80s: %s", path, body)
			require.Equal(t, "not_found", jsonString(t, body, "error"), "GET %.80s", path)
		}
		key := uuid.NewString()
		path := "/orders/" + id + "/complete"
		for _, replay := range []bool{false, true} {
			status, header, body := httpDo(t, "POST", p.url+path, with(as, "Idempotency-Key", key), `{}`)
			require.Equal(t, http.StatusNotFound, status, "POST %.80s: %s", path, body)
			require.Equal(t, "not_found", jsonString(t, body, "error"), "POST %.80s", path)
			switch {
			case len(path) > 2048:
				// Too long for the key table: answered, never stored.
				require.Empty(t, header.Get("Idempotent-Replayed"), "POST %.80s", path)
				require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key))
			case replay:
				require.Equal(t, "true", header.Get("Idempotent-Replayed"), "POST %.80s: the 404 is stored", path)
			}
		}
	}
}

// A gateway-sim with a control token refuses to tell its capabilities to a client without it:
// serve's --gateway-url client sends $PGSAGA_SIM_CONTROL_TOKEN, and charges through it.
func TestServeChargesThroughAGuardedSimulator(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const token = "sim-control-token-0123456789"
	gw := start(t, nil, true, "gateway-sim", "--addr", "127.0.0.1:0", "--control-token", token)
	r := pgsaga(t, nil, serveArgs(w.db.URL, "--gateway-url", gw.url, "--log-level", "off")...)
	requireFailure(t, r, "error connecting to the gateway")
	p := start(t, []string{"PGSAGA_SIM_CONTROL_TOKEN=" + token}, true, serveArgs(w.db.URL, "--gateway-url", gw.url, "--log-level", "off")...)
	as := bearer(apiKey(t, w.db.URL, "t1", "alice").Secret, "")
	status, _, body := httpDo(t, "POST", p.url+"/invoices", with(as, "Idempotency-Key", uuid.NewString()), `{"amount": 500, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	status, _, body = httpDo(t, "POST", p.url+"/payments", with(as, "Idempotency-Key", uuid.NewString()),
		`{"invoice_id": "`+jsonString(t, body, "id")+`", "amount": 500}`)
	require.Equal(t, http.StatusCreated, status, string(body))
}

// goInternals are words a client-facing message must never hold: Go's types and the decoder's
// or the driver's own wording.
var goInternals = regexp.MustCompile(`(?i)go (value|struct)|struct \{|json\.|unmarshal|reflect|sqlstate|pgx|pgconn|invalid url escape`)

// The messages of refusals are for people: which member has the wrong kind of value, in JSON's
// words, never the decoder's (cannot unmarshal array into Go value of type struct { Total
// json.RawMessage }); the console's refusal of a form it cannot read likewise.
func TestMessagesQuoteNoGoTypes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
	as := bearer(apiKey(t, w.db.URL, "t1", "alice").Secret, "")
	for _, c := range []struct{ path, body, want string }{
		{"/orders", `[1, 2]`, "the body must be a JSON object, not an array"},
		{"/invoices", `"5000 USD"`, "the body must be a JSON object, not a string"},
		{"/invoices", `{"amount": 5000, "currency": 840}`, "currency must be a string, not a number"},
		{"/invoices", `{"amount": 5000, "currency": ["USD"]}`, "currency must be a string, not an array"},
		{"/payments", `{"invoice_id": {"id": "inv_1"}, "amount": 1}`, "invoice_id must be a string, not an object"},
		{"/payments", `{"invoice_id": true, "amount": 1}`, "invoice_id must be a string, not true or false"},
		{"/orders", `{"total": [1200]}`, "total must be a number"},
		{"/orders/ord_1/complete", `[]`, "body must be a JSON object"},
	} {
		status, _, body := httpDo(t, "POST", p.url+c.path, with(as, "Idempotency-Key", uuid.NewString()), c.body)
		require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", c.path, c.body, body)
		require.Equal(t, "invalid_request", jsonString(t, body, "error"), "%s %s", c.path, c.body)
		require.Equal(t, c.want, jsonString(t, body, "message"), "%s %s", c.path, c.body)
		require.NotRegexp(t, goInternals, string(body))
	}

	r := pgsaga(t, nil, "operator", "add", "ana", "--database-url", w.db.URL)
	require.Equal(t, 0, r.code, r.String())
	con := start(t, nil, true, "console", "--addr", "127.0.0.1:0", "--insecure-http", "--database-url", w.db.URL, "--gateway-url", w.simURL)
	status, _, body := httpDo(t, "POST", con.url+"/login",
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}, "token=%zz")
	require.Equal(t, http.StatusBadRequest, status, string(body))
	require.Equal(t, "The login form could not be read: the body is not a form (application/x-www-form-urlencoded) that could be read",
		jsonString(t, body, "message"))
	require.NotRegexp(t, goInternals, string(body))
}
