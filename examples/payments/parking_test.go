package payments_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/saga"
)

// TestPaymentParksAfterMaxAttempts: a gateway that always answers 503 before charging, and a
// MaxAttempts of 2. The first request is a 503 to retry; the second attempt exhausts the key,
// which is parked as failed and answers 503 operation_parked from then on. Nothing is charged.
// When the gateway is back, an operator's Resume finishes it with one charge.
func TestPaymentParksAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{sim: &sim.Config{Faults: sim.Faults{FailBefore: 1}}, gatewayRetries: 1, maxAttempts: 2})
	inv := e.createInvoice(alice, 5000)
	key, body := newKey(), paymentBody(inv, 5000)

	r := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	require.Equal(t, "temporarily_unavailable", r.code(t))
	e.requireStartedUnanswered(alice, key)

	e.waitUntilDue(alice, key, body)
	r = e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	require.Equal(t, "operation_parked", r.code(t), "the attempt that exhausts the key parks it")
	k := e.key(alice, key)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, 2, k.Attempts)
	require.Equal(t, "payment_created", k.RecoveryPoint)
	require.Contains(t, k.LastError, "attempts exhausted")
	require.Nil(t, k.Response)

	sent := e.points.Hits(chaos.ChargeBefore)
	require.Equal(t, 4, sent, "two attempts of two sends each")
	r = e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, "operation_parked", r.code(t))
	require.Equal(t, sent, e.points.Hits(chaos.ChargeBefore), "a parked key is not tried again")
	require.Zero(t, e.sim.TotalCharges())
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payments WHERE status = 'pending'`))

	_, err := e.sim.SetFaults(func(s *sim.Settings) { s.FailBefore = 0 })
	require.NoError(t, err)
	res, err := e.client.Resume(t.Context(), saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, key, &saga.ResumeOpts{Parked: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status, string(res.Response.Body))
	first := &reply{status: res.Response.Status, body: res.Response.Body}
	e.requirePaidOnce(alice, inv, 5000, decode(t, first))
	e.requireReplays(alice, key, body, first)
}
