package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

func TestResumeFinishesAParkedKeyWithOneCharge(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET status = 'failed', last_error = 'attempts exhausted' WHERE key = $1`, key)
	require.Zero(t, w.sim.TotalCharges())

	// The service itself refuses the parked key.
	status, body := w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, string(body), "operation_parked")

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, r.code, r.String())
	lines := strings.SplitN(r.stdout, "\n", 2)
	require.Equal(t, "201 Created", lines[0])
	require.Contains(t, lines[1], `"status":"succeeded"`)

	var paymentID string
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT id FROM payments WHERE invoice_id = $1`, invoiceID).Scan(&paymentID))
	require.Equal(t, 1, w.sim.ChargesFor(gateway.DeriveKey("payment", paymentID)))
	require.Equal(t, 1, w.sim.TotalCharges())
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded'`, invoiceID))

	// The client's retry now replays what resume stored, byte for byte.
	status, body = w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, strings.TrimSuffix(lines[1], "\n"), string(body))

	// Resuming a completed key prints the stored response and charges nothing.
	again := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, again.code, again.String())
	require.Equal(t, r.stdout, again.stdout)
	require.Equal(t, 1, w.sim.TotalCharges())
}

func TestResumeInquiresBeforeChargingAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.stuckPayment("t1", "alice")
	// As if a later attempt's charge reached the gateway and its process died before recording
	// it: the charge exists under the derived key, the key is still at payment_created.
	var paymentID string
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT id FROM payments WHERE invoice_id = $1`, invoiceID).Scan(&paymentID))
	ref := gateway.DeriveKey("payment", paymentID)
	_, err := w.sim.Gateway().Send(t.Context(), gateway.ChargeParams{Amount: 2000, Currency: "USD", Reference: ref, IdempotencyKey: ref})
	require.NoError(t, err)
	charged := w.sim.TotalCharges()
	require.Equal(t, 1, charged)
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, r.code, r.String())
	require.True(t, strings.HasPrefix(r.stdout, "201 Created\n"), r.stdout)
	// Inquiry found the charge: nothing new was charged.
	require.Equal(t, charged, w.sim.TotalCharges())
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded'`, invoiceID))
}

func TestResumeRefusesWhileALeaseIsHeld(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	// Another process holds the key: a live lease with its own token.
	w.exec(`UPDATE pgsaga_key SET locked_until = now() + interval '1 hour', lease_token = gen_random_uuid() WHERE key = $1`, key)
	var attempts int
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT attempts FROM pgsaga_key WHERE key = $1`, key).Scan(&attempts))

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	requireFailure(t, r, "held by another process")
	require.Empty(t, r.stdout)
	require.Zero(t, w.sim.TotalCharges())
	require.Equal(t, attempts, w.count(`SELECT attempts FROM pgsaga_key WHERE key = $1 AND status = 'started'`, key))
}

func TestResumeMissingKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--tenant", "t1", "--actor", "alice", "no-such-key-1")
	requireFailure(t, r, `no key "no-such-key-1" for tenant t1 actor alice`)
}

func TestResumeKeepsAFailingKeyStarted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)
	w.sim.FailNext(100)
	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	requireFailure(t, r, "stays started")
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'started'`, key))
	require.Zero(t, w.sim.TotalCharges())
}

func TestResumeJSON(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", "--json", key)
	require.Equal(t, 0, r.code, r.String())
	var doc map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.ElementsMatch(t, []string{"status", "body"}, mapKeys(doc))
	require.Equal(t, "201", string(doc["status"]))
	var body struct {
		InvoiceID string `json:"invoice_id"`
		Status    string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(doc["body"], &body), "the body is the stored JSON value, not a string")
	require.Equal(t, invoiceID, body.InvoiceID)
	require.Equal(t, "succeeded", body.Status)

	// The stored bytes, as the client's retry replays them.
	status, stored := w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(t, http.StatusCreated, status)
	require.JSONEq(t, string(stored), string(doc["body"]))

	// A refusal is still one line on stderr, and nothing on stdout.
	held, _ := w.stuckPayment("t1", "bob")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() + interval '1 hour', lease_token = gen_random_uuid() WHERE key = $1`, held)
	r = pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "bob", "--json", held)
	requireFailure(t, r, "held by another process")
	require.Empty(t, r.stdout)
}

// resumeResult is one line of `resume --stuck --json`.
type resumeResult struct {
	Tenant, Actor, Key string
	Status             *int
	Body               json.RawMessage
	Error              *string
}

func TestResumeStuck(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	expired, _ := w.stuckPayment("t1", "alice")
	parked, _ := w.stuckPayment("t1", "bob")
	live, _ := w.stuckPayment("t1", "carol")
	other, _ := w.stuckPayment("t2", "dave")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key IN ($1, $2)`, expired, other)
	w.exec(`UPDATE pgsaga_key SET status = 'failed', last_error = 'attempts exhausted' WHERE key = $1`, parked)
	w.exec(`UPDATE pgsaga_key SET locked_until = now() + interval '1 hour', lease_token = gen_random_uuid() WHERE key = $1`, live)
	stuckNow := func() int {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE status = 'failed' OR (status = 'started' AND locked_until <= now())`)
	}
	require.Equal(t, 3, stuckNow())

	// Filters: an operation with no stuck keys resumes nothing.
	r := pgsaga(t, nil, "resume", url, "--gateway-url", w.simURL, "--stuck", "--operation", "create_invoice")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "no stuck keys\n", r.stdout)
	require.Equal(t, 3, stuckNow())

	// One tenant's, as JSON.
	r = pgsaga(t, nil, "resume", url, "--gateway-url", w.simURL, "--stuck", "--tenant", "t2", "--operation", "create_payment", "--json")
	require.Equal(t, 0, r.code, r.String())
	var doc struct{ Results []resumeResult }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Len(t, doc.Results, 1)
	got := doc.Results[0]
	require.Equal(t, []string{"t2", "dave", other}, []string{got.Tenant, got.Actor, got.Key})
	require.NotNil(t, got.Status)
	require.Equal(t, http.StatusCreated, *got.Status)
	require.Contains(t, string(got.Body), `"status":"succeeded"`)
	require.Nil(t, got.Error)
	require.Equal(t, 2, stuckNow())

	// --limit 1: the newest stuck key only (the parked one, made after the expired one).
	r = pgsaga(t, nil, "resume", url, "--gateway-url", w.simURL, "--stuck", "--limit", "1")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "t1 bob "+parked+" 201 Created\n", r.stdout)
	require.Equal(t, 1, stuckNow())

	// The rest; the live lease is not stuck and is left alone.
	r = pgsaga(t, nil, "resume", url, "--gateway-url", w.simURL, "--stuck")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "t1 alice "+expired+" 201 Created\n", r.stdout)
	require.Zero(t, stuckNow())
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'started'`, live))
	require.Equal(t, 3, w.sim.TotalCharges(), "one charge per resumed key")
}

func TestResumeStuckReportsKeysThatDidNotFinish(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first, _ := w.stuckPayment("t1", "alice")
	second, _ := w.stuckPayment("t1", "bob")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key IN ($1, $2)`, first, second)
	w.sim.FailNext(100)

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--stuck", "--json")
	requireFailure(t, r, "2 of 2 stuck keys did not finish")
	var doc struct{ Results []resumeResult }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc), r.stdout)
	require.Len(t, doc.Results, 2)
	for _, res := range doc.Results {
		require.Nil(t, res.Status)
		require.Equal(t, "null", string(res.Body))
		require.NotNil(t, res.Error)
		require.Contains(t, *res.Error, "stays started")
	}
	require.Equal(t, 2, w.count(`SELECT count(*) FROM pgsaga_key WHERE status = 'started'`))
	require.Zero(t, w.sim.TotalCharges())

	r = pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--stuck")
	requireFailure(t, r, "2 of 2 stuck keys did not finish")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	require.True(t, strings.HasPrefix(lines[0], "t1 bob "+second+" error: "), r.stdout)
	require.True(t, strings.HasPrefix(lines[1], "t1 alice "+first+" error: "), r.stdout)
}

func TestResumeBadUsage(t *testing.T) {
	t.Parallel()
	url := "--database-url=postgres://x@127.0.0.1:1/x"
	for _, tc := range []struct {
		args     []string
		contains string
	}{
		{[]string{"resume", url, "--actor", "a", "some-key-1"}, "--tenant"},
		{[]string{"resume", url, "--tenant", "t", "some-key-1"}, "--actor"},
		{[]string{"resume", url, "--tenant", "t", "--actor", "a"}, "KEY"},
		{[]string{"resume", url, "--stuck", "some-key-1"}, `unexpected argument "some-key-1"`},
		{[]string{"resume", url, "--stuck", "--actor", "a"}, "--actor"},
		{[]string{"resume", url, "--stuck", "--limit", "-1"}, "--limit"},
		{[]string{"resume", url, "--tenant", "t", "--actor", "a", "--operation", "x", "some-key-1"}, "--operation"},
		{[]string{"resume", url, "--tenant", "t", "--actor", "a", "--limit", "5", "some-key-1"}, "--limit"},
	} {
		requireUsage(t, pgsaga(t, nil, tc.args...), tc.contains)
	}
}
