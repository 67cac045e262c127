package payments_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// The tests named TestPgBouncer* serve the payments API through PgBouncer in transaction
// pooling mode: the service's pool has more clients than the bouncer has server connections
// for the database, so every request's transactions share server sessions with others'. The
// worker's paths through the bouncer are in the worker package's TestPgBouncer* tests.

// Single-transaction operations: the effect, its replay byte for byte, a reused key refused,
// a guarded transition, and concurrent duplicates that make one sale.
func TestPgBouncerSingleTransaction(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{pooled: true})
	key := newKey()
	first := e.do("POST", "/orders", alice, key, `{"total": 1200}`)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	again := e.do("POST", "/orders", alice, key, `{"total": 1200}`)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	reused := e.do("POST", "/orders", alice, key, `{"total": 1300}`)
	require.Equal(t, http.StatusUnprocessableEntity, reused.status)
	require.Equal(t, "idempotency_key_reused", reused.code(t))

	order := first.json(t)["id"].(string)
	completeKey := newKey()
	replies := e.sendTogether(8, "POST", "/orders/"+order+"/complete", alice, completeKey, `{}`)
	var done *reply
	for _, r := range replies {
		if r.status == http.StatusOK {
			done = r
		}
	}
	require.NotNil(t, done, "one of the duplicates completed the order")
	for _, r := range replies {
		// Each duplicate either replays the completion or was told to come back.
		switch r.status {
		case http.StatusOK:
			require.Equal(t, done.body, r.body)
		case http.StatusConflict:
			require.Equal(t, "request_in_progress", r.code(t))
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	other := e.do("POST", "/orders/"+order+"/complete", alice, newKey(), `{}`)
	require.Equal(t, http.StatusConflict, other.status)
	require.Equal(t, "order_already_completed", other.code(t))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM sales WHERE order_id = $1`, order))
}

// A phased payment: its phases around the charge, 409 for the duplicates while the charge is
// held, the replay after, and a payment over the (now paid) balance refused.
func TestPgBouncerPhasedPayment(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{pooled: true})
	inv := e.createInvoice(alice, 5000)
	key, body := newKey(), paymentBody(inv, 5000)
	gate := e.points.Block(chaos.ChargeAfter)
	var first *reply
	g := crash.Start(func() { first = e.do("POST", "/payments", alice, key, body) })
	<-gate.Reached()
	for _, r := range e.sendTogether(6, "POST", "/payments", alice, key, body) {
		require.Equal(t, http.StatusConflict, r.status, string(r.body))
		require.Equal(t, "request_in_progress", r.code(t))
		require.NotEmpty(t, r.header.Get("Retry-After"))
	}
	gate.Release()
	require.False(t, g.Wait())
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	e.requireReplays(alice, key, body, first)

	over := e.do("POST", "/payments", alice, newKey(), paymentBody(inv, 1))
	require.Equal(t, http.StatusUnprocessableEntity, over.status)
	require.Equal(t, "amount_exceeds_balance", over.code(t))
	e.requirePaidOnce(alice, inv, 5000, decode(t, first))
}

// A payment whose process died after the charge, resumed by the operator's Resume through the
// pooler (the gateway's key makes the resumed charge a replay at the provider).
func TestPgBouncerResume(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{pooled: true})
	inv := e.createInvoice(alice, 5000)
	key, body := newKey(), paymentBody(inv, 5000)
	e.points.Crash(chaos.ChargeAfter)
	crashed, _, _ := e.runDirect(alice, key, body)
	require.True(t, crashed)
	e.expireLease(key)
	res, err := e.client.Resume(t.Context(), saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, key, nil)
	require.NoError(t, err)
	first := &reply{status: res.Response.Status, body: res.Response.Body}
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	e.requirePaidOnce(alice, inv, 5000, decode(t, first))
	e.requireReplays(alice, key, body, first)
}

// A payment parked with an outcome nothing can resolve (a provider with neither keys nor
// inquiry), found through the read API (KeyList, KeyGet) and settled by an operator, all through
// the pooler; the client's retry then gets the settled answer.
func TestPgBouncerParkedPaymentSettled(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{pooled: true, sim: &sim.Config{Idempotency: off(), Inquiry: off()}})
	inv := e.createInvoice(alice, 5000)
	key, body := newKey(), paymentBody(inv, 5000)
	e.points.Crash(chaos.ChargeAfter)
	crashed, _, _ := e.runDirect(alice, key, body)
	require.True(t, crashed)
	e.expireLease(key)
	parked := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, "operation_parked", parked.code(t))

	ctx := t.Context()
	stuck, err := e.client.KeyList(ctx, &saga.KeyListParams{Stuck: true, Limit: 1})
	require.NoError(t, err)
	require.Len(t, stuck.Keys, 1)
	require.Equal(t, key, stuck.Keys[0].Key)
	all, err := e.client.KeyList(ctx, &saga.KeyListParams{Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, all.NextCursor, "the invoice's key is on the next page")
	next, err := e.client.KeyList(ctx, &saga.KeyListParams{Limit: 1, Cursor: all.NextCursor})
	require.NoError(t, err)
	require.Len(t, next.Keys, 1)
	require.NotEqual(t, all.Keys[0].Key, next.Keys[0].Key)

	scope := saga.Scope{Tenant: alice.tenant, Actor: alice.actor}
	k, err := e.client.KeyGet(ctx, scope, key)
	require.NoError(t, err)
	require.Equal(t, saga.ParkedOutcomeUnknown, k.ParkedReason)
	require.NotEmpty(t, k.Calls, "the call journal, read through the pooler")
	charge := e.sim.Ledger().Charges[0]
	res, err := e.client.Settle(ctx, scope, key, &saga.SettleParams{Outcome: phases.SettleSucceeded,
		Note: "charged at the provider", Reference: charge.ID, By: "test"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status, string(res.Response.Body))
	k, err = e.client.KeyGet(ctx, scope, key)
	require.NoError(t, err)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Len(t, k.History, 1)

	retry := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusCreated, retry.status, string(retry.body))
	require.Equal(t, res.Response.Body, retry.body)
	require.Equal(t, 1, e.sim.TotalCharges())
}
