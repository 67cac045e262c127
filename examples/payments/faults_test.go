package payments_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/saga"
)

func off() *bool { b := false; return &b }

func decode(t *testing.T, r *reply) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(r.body, &v), string(r.body))
	return v
}

// requireStartedUnanswered checks what a transient failure after the first phase leaves: a
// started key at payment_created with no response, its lease given back, its error noted.
func (e *chaosEnv) requireStartedUnanswered(as who, key string) {
	e.t.Helper()
	k := e.key(as, key)
	require.NotNil(e.t, k)
	require.Equal(e.t, saga.KeyStatusStarted, k.Status)
	require.Equal(e.t, "payment_created", k.RecoveryPoint)
	require.Nil(e.t, k.Response, "nothing is stored for a transient failure")
	require.False(e.t, k.Leased, "the lease is given back at once so a retry can continue")
	require.NotEmpty(e.t, k.LastError)
	require.Equal(e.t, 1, e.count(`SELECT count(*) FROM payments WHERE status = 'pending'`))
}

// TestLostResponseResolvedInProcess: the gateway charges and its answer is lost; the service
// resolves the ambiguity itself before answering (by inquiry, or by re-sending the same key) and
// the client's one request gets its 201 with one charge.
func TestLostResponseResolvedInProcess(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		o    chaosOpts
		lose int
		// inquiries and sends are how many times the service asks and charges (a provider
		// without keys is asked before the first send too).
		inquiries, sends int
	}{
		"inquiry, in-process":          {chaosOpts{}, 1, 1, 1},
		"inquiry, over HTTP":           {chaosOpts{overHTTP: true}, 1, 1, 1},
		"keys only, in-process":        {chaosOpts{sim: &sim.Config{Inquiry: off()}}, 1, 0, 2},
		"keys only, over HTTP":         {chaosOpts{sim: &sim.Config{Inquiry: off()}, overHTTP: true}, 1, 0, 2},
		"keys only, lost twice":        {chaosOpts{sim: &sim.Config{Inquiry: off()}, gatewayRetries: 2}, 2, 0, 3},
		"inquiry only, in-process":     {chaosOpts{sim: &sim.Config{Idempotency: off()}}, 1, 2, 1},
		"inquiry only, over HTTP":      {chaosOpts{sim: &sim.Config{Idempotency: off()}, overHTTP: true}, 1, 2, 1},
		"inquiry, one retry allowed":   {chaosOpts{gatewayRetries: 1}, 1, 1, 1},
		"keys only, one retry allowed": {chaosOpts{sim: &sim.Config{Inquiry: off()}, gatewayRetries: 1}, 1, 0, 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChaosEnv(t, tc.o)
			inv := e.createInvoice(alice, 5000)
			key, body := newKey(), paymentBody(inv, 2000)
			e.sim.LoseNext(tc.lose)
			first := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusCreated, first.status, string(first.body))
			require.Equal(t, tc.inquiries, e.points.Hits(chaos.InquireBefore), "inquiries")
			require.Equal(t, tc.sends, e.points.Hits(chaos.ChargeBefore), "charge requests sent")
			e.requirePaidOnce(alice, inv, 5000, decode(t, first))
			e.requireReplays(alice, key, body, first)
		})
	}
}

// TestLostResponseGivesUpThenRetryFinishes: the answer is lost on every in-process attempt, so
// the service gives up with a 503 and stores nothing; the key stays started; the client's retry
// with the same key resolves the charge (inquiry, or the same key) and gets the 201: one charge.
func TestLostResponseGivesUpThenRetryFinishes(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		o   chaosOpts
		arm func(e *chaosEnv)
	}{
		"keys only": {chaosOpts{sim: &sim.Config{Inquiry: off()}, gatewayRetries: 1}, func(e *chaosEnv) {
			e.sim.LoseNext(2) // the charge and its re-send with the same key
		}},
		"keys only, over HTTP": {chaosOpts{sim: &sim.Config{Inquiry: off()}, gatewayRetries: 1, overHTTP: true}, func(e *chaosEnv) {
			e.sim.LoseNext(2)
		}},
		"inquiry unavailable": {chaosOpts{gatewayRetries: 1}, func(e *chaosEnv) {
			e.sim.LoseNext(1) // the charge's answer is lost, then the inquiry fails
			e.points.Fail(chaos.InquireBefore, gateway.NotDone(errors.New("inquiry endpoint down")))
		}},
		"inquiry only, inquiry unavailable": {chaosOpts{sim: &sim.Config{Idempotency: off()}, gatewayRetries: 1}, func(e *chaosEnv) {
			e.sim.LoseNext(1)
			e.points.Fail(chaos.InquireBefore, gateway.NotDone(errors.New("inquiry endpoint down")))
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChaosEnv(t, tc.o)
			inv := e.createInvoice(alice, 5000)
			key, body := newKey(), paymentBody(inv, 5000)
			tc.arm(e)

			gaveUp := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusServiceUnavailable, gaveUp.status, string(gaveUp.body))
			require.Equal(t, "temporarily_unavailable", gaveUp.code(t))
			require.NotEmpty(t, gaveUp.header.Get("Retry-After"))
			require.Empty(t, e.points.Pending())
			require.Equal(t, 1, e.sim.TotalCharges(), "the charge was made; only its answer was lost")
			e.requireStartedUnanswered(alice, key)

			e.waitUntilDue(alice, key, body)
			first := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusCreated, first.status, string(first.body))
			require.Empty(t, first.header.Get("Idempotent-Replayed"))
			e.requirePaidOnce(alice, inv, 5000, decode(t, first))
			e.requireReplays(alice, key, body, first)
		})
	}
}

// TestUnavailableBeforeChargeThenSuccess: the gateway refuses before charging (503) on every
// in-process attempt; the client gets a 503, nothing is stored, the key stays started with its
// lease given back; the retry charges once.
func TestUnavailableBeforeChargeThenSuccess(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]chaosOpts{
		"in-process": {gatewayRetries: 1},
		"over HTTP":  {gatewayRetries: 1, overHTTP: true},
		"no inquiry": {gatewayRetries: 1, sim: &sim.Config{Inquiry: off()}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChaosEnv(t, o)
			inv := e.createInvoice(alice, 5000)
			key, body := newKey(), paymentBody(inv, 1500)
			e.sim.FailNext(2)

			refused := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusServiceUnavailable, refused.status, string(refused.body))
			require.Equal(t, "temporarily_unavailable", refused.code(t))
			require.Zero(t, e.sim.TotalCharges())
			e.requireStartedUnanswered(alice, key)
			require.Equal(t, 0, e.count(`SELECT paid FROM invoices WHERE id = $1`, inv))

			e.waitUntilDue(alice, key, body)
			first := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusCreated, first.status, string(first.body))
			e.requirePaidOnce(alice, inv, 5000, decode(t, first))
			e.requireReplays(alice, key, body, first)
			require.Equal(t, 2, e.key(alice, key).Attempts)
		})
	}
}

// TestGatewayWithoutKeys: a provider with no idempotency keys. With inquiry, a crash after the
// charge reached it is resolved by asking, so there is one charge; without inquiry either,
// nothing can tell whether the first attempt charged, so the key is parked for an operator
// rather than charged again.
func TestGatewayWithoutKeys(t *testing.T) {
	t.Parallel()
	t.Run("inquiry resolves a crash after the charge", func(t *testing.T) {
		t.Parallel()
		for _, how := range []string{"client retry", "resume"} {
			t.Run(how, func(t *testing.T) {
				t.Parallel()
				e := newChaosEnv(t, chaosOpts{sim: &sim.Config{Idempotency: off()}, overHTTP: how == "resume"})
				inv := e.createInvoice(alice, 5000)
				key, body := newKey(), paymentBody(inv, 5000)
				e.points.Crash(chaos.ChargeAfter)
				crashed, _, _ := e.runDirect(alice, key, body)
				require.True(t, crashed)
				require.Equal(t, 1, e.sim.TotalCharges())
				e.expireLease(key)

				var first *reply
				if how == "resume" {
					res, err := e.client.Resume(t.Context(), saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, key, nil)
					require.NoError(t, err)
					first = &reply{status: res.Response.Status, body: res.Response.Body}
				} else {
					first = e.do("POST", "/payments", alice, key, body)
				}
				require.Equal(t, http.StatusCreated, first.status, string(first.body))
				e.requirePaidOnce(alice, inv, 5000, decode(t, first))
				require.Equal(t, 2, e.points.Hits(chaos.InquireBefore), "each execution asks before it charges")
				require.Equal(t, 1, e.points.Hits(chaos.ChargeBefore), "and does not charge again")
				e.requireReplays(alice, key, body, first)
			})
		}
	})

	t.Run("neither keys nor inquiry parks", func(t *testing.T) {
		t.Parallel()
		e := newChaosEnv(t, chaosOpts{sim: &sim.Config{Idempotency: off(), Inquiry: off()}})
		inv := e.createInvoice(alice, 5000)
		key, body := newKey(), paymentBody(inv, 5000)
		e.points.Crash(chaos.ChargeAfter)
		crashed, _, _ := e.runDirect(alice, key, body)
		require.True(t, crashed)
		e.expireLease(key)

		parked := e.do("POST", "/payments", alice, key, body)
		require.Equal(t, http.StatusServiceUnavailable, parked.status, string(parked.body))
		require.Equal(t, "operation_parked", parked.code(t))
		require.Equal(t, 1, e.sim.TotalCharges(), "never charged again blindly")
		k := e.key(alice, key)
		require.Equal(t, saga.KeyStatusParked, k.Status)
		require.Equal(t, "payment_created", k.RecoveryPoint)
		require.Contains(t, k.LastError, "neither inquiry nor idempotency keys")
		again := e.do("POST", "/payments", alice, key, body)
		require.Equal(t, "operation_parked", again.code(t))
		require.Equal(t, 1, e.sim.TotalCharges())
	})
}
