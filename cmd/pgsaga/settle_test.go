package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// parkedPayment makes a payment whose key is parked with outcome_unknown, as a charge nothing
// could resolve leaves it, and returns its key and invoice.
func (w *world) parkedPayment(tenant, actor string) (key, invoiceID string) {
	w.t.Helper()
	key, invoiceID = w.stuckPayment(tenant, actor)
	w.exec(`UPDATE pgsaga_key SET status = 'failed', parked_reason = 'outcome_unknown', last_error = 'the provider has neither inquiry nor idempotency keys' WHERE key = $1`, key)
	return key, invoiceID
}

func TestSettleFailedReleasesTheReservation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.parkedPayment("t1", "alice")
	url := "--database-url=" + w.db.URL

	r := pgsaga(t, []string{"USER=carol"}, "settle", url, "--tenant", "t1", "--actor", "alice", "--outcome", "failed",
		"--note", "no charge at the provider", "--json", key)
	require.Equal(t, 0, r.code, r.String())
	var out struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	require.Equal(t, http.StatusPaymentRequired, out.Status)
	require.Contains(t, string(out.Body), `"error":"payment_failed"`)

	// The payment is failed and listed so; the invoice's reservation is back.
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'failed'`, invoiceID))
	require.Equal(t, 0, w.count(`SELECT reserved FROM invoices WHERE id = $1`, invoiceID))
	status, _, body := httpDo(t, "GET", w.api.URL+"/payments?invoice_id="+invoiceID, map[string]string{"X-Tenant-ID": "t1", "X-Actor-ID": "alice"}, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"status":"failed"`)

	// The client's retry replays the operator's answer.
	status, body = w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(t, http.StatusPaymentRequired, status)
	require.JSONEq(t, string(out.Body), string(body))

	// show has the decision in the key's history.
	shown := pgsaga(t, nil, "show", url, "--tenant", "t1", "--actor", "alice", "--json", key)
	require.Equal(t, 0, shown.code, shown.String())
	var k struct {
		State        string  `json:"state"`
		ParkedReason *string `json:"parked_reason"`
		History      []struct {
			By, Action, Outcome, Note string
			Reference                 *string
		} `json:"history"`
	}
	require.NoError(t, json.Unmarshal([]byte(shown.stdout), &k))
	require.Equal(t, "completed", k.State)
	require.Nil(t, k.ParkedReason)
	require.Len(t, k.History, 1)
	require.Equal(t, "carol", k.History[0].By)
	require.Equal(t, "settle", k.History[0].Action)
	require.Equal(t, "failed", k.History[0].Outcome)
	require.Equal(t, "no charge at the provider", k.History[0].Note)
	require.Nil(t, k.History[0].Reference)

	// A settled key is no longer parked.
	again := pgsaga(t, nil, "settle", url, "--tenant", "t1", "--actor", "alice", "--outcome", "failed", "--note", "again", key)
	requireFailure(t, again, "is not parked")
}

func TestSettleSucceededRecordsTheProvidersCharge(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.parkedPayment("t1", "alice")
	url := "--database-url=" + w.db.URL

	// The example's hook needs the provider's charge id: one line, exit 1, nothing changed.
	r := pgsaga(t, nil, "settle", url, "--tenant", "t1", "--actor", "alice", "--outcome", "succeeded", "--note", "seen at the provider", key)
	requireFailure(t, r, "--reference")
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'failed'`, key))

	r = pgsaga(t, nil, "settle", url, "--tenant", "t1", "--actor", "alice", "--outcome", "succeeded",
		"--note", "seen at the provider", "--reference", "ch_778", key)
	require.Equal(t, 0, r.code, r.String())
	lines := strings.SplitN(r.stdout, "\n", 2)
	require.Equal(t, "201 Created", lines[0])
	require.Contains(t, lines[1], `"charge_id":"ch_778"`)
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded' AND charge_id = 'ch_778'`, invoiceID))
	require.Equal(t, 2000, w.count(`SELECT paid FROM invoices WHERE id = $1`, invoiceID))
	require.Zero(t, w.sim.TotalCharges(), "settling charges nothing")
}

func TestSettleRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	started, _ := w.stuckPayment("t1", "alice")
	requireFailure(t, pgsaga(t, nil, "settle", url, "--tenant", "t1", "--actor", "alice", "--outcome", "failed", "--note", "n", started), "is not parked")
	requireFailure(t, pgsaga(t, nil, "settle", url, "--tenant", "t1", "--actor", "alice", "--outcome", "failed", "--note", "n", "no-such-key-1"), `no key "no-such-key-1"`)

	bad := "--database-url=postgres://x@127.0.0.1:1/x"
	requireUsage(t, pgsaga(t, nil, "settle", bad, "--tenant", "t", "--actor", "a", "--note", "n", "some-key-1"), "--outcome")
	requireUsage(t, pgsaga(t, nil, "settle", bad, "--tenant", "t", "--actor", "a", "--outcome", "failed", "some-key-1"), "--note")
	requireUsage(t, pgsaga(t, nil, "settle", bad, "--tenant", "t", "--actor", "a", "--outcome", "maybe", "--note", "n", "some-key-1"), `invalid --outcome "maybe"`)
	requireUsage(t, pgsaga(t, nil, "settle", bad, "--actor", "a", "--outcome", "failed", "--note", "n", "some-key-1"), "--tenant")
	requireUsage(t, pgsaga(t, nil, "settle", bad, "--tenant", "t", "--actor", "a", "--outcome", "failed", "--note", "n"), "KEY")
}
