package payments_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/saga"
)

// TestZombiePaymentIsFenced: process A is frozen (as by SIGSTOP) inside the charge, its lease
// expires, process B takes the key over and completes the payment, then A thaws. A must record
// nothing (its record phase is fenced by the lease token) and send no second charge; its client
// gets B's stored answer — not marked as a replay, since A's request is the one that started the
// key. One charge, one succeeded payment, the invoice paid once.
func TestZombiePaymentIsFenced(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		o     chaosOpts
		point string
		// realLease waits for the lease to run out on the database clock instead of ending it.
		realLease bool
	}{
		// A's charge was made; A holds its answer. B finds it by inquiry. A thaws and tries to
		// record it.
		"frozen holding the charge's answer": {chaosOpts{}, chaos.ChargeAfter, false},
		// A froze before sending the charge, to a provider without idempotency keys. B charges.
		// A thaws past its call deadline (shorter than the lease), so it must not send.
		"frozen before sending, no provider keys": {chaosOpts{sim: &sim.Config{Idempotency: off()}, lease: time.Second}, chaos.ChargeBefore, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChaosEnv(t, tc.o)
			inv := e.createInvoice(alice, 5000)
			key, body := newKey(), paymentBody(inv, 5000)
			gate := e.points.Freeze(tc.point)
			var zombie *reply
			a := crash.Start(func() { zombie = e.do("POST", "/payments", alice, key, body) })
			<-gate.Reached()
			if tc.realLease {
				require.Eventually(t, func() bool { return !e.key(alice, key).Leased }, 10*time.Second, 20*time.Millisecond)
			} else {
				e.expireLease(key)
			}

			res, err := e.otherProcess().Resume(t.Context(), saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, key, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.Response.Status, string(res.Response.Body))
			require.True(t, res.Resumed)
			winner := &reply{status: res.Response.Status, body: res.Response.Body}

			gate.Release()
			require.False(t, a.Wait())
			require.Equal(t, http.StatusCreated, zombie.status, "the zombie answers from the key as B left it: %s", zombie.body)
			require.Empty(t, zombie.header.Get("Idempotent-Replayed"), "the request that started the key is not a replay")
			require.Equal(t, winner.body, zombie.body)

			e.requirePaidOnce(alice, inv, 5000, decode(t, winner))
			e.requireReplays(alice, key, body, winner)
		})
	}
}
