package payments_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
)

// sendTogether sends n copies of one request at once and returns the answers.
func (e *env) sendTogether(n int, method, path string, as who, key, body string) []*reply {
	replies := make([]*reply, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			replies[i] = e.do(method, path, as, key, body)
		}()
	}
	close(start)
	wg.Wait()
	return replies
}

// TestConcurrentDuplicatePayments: ten copies of one payment at once. One executes; every
// other is told to come back (409 request_in_progress with Retry-After) or, arriving after the
// first finished, gets its replay. One charge.
func TestConcurrentDuplicatePayments(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{sim: &sim.Config{Faults: sim.Faults{Latency: 200 * time.Millisecond}}})
	inv := e.createInvoice(alice, 5000)
	key, body := newKey(), paymentBody(inv, 5000)

	replies := e.sendTogether(10, "POST", "/payments", alice, key, body)
	var executed *reply
	for _, r := range replies {
		switch r.status {
		case http.StatusCreated:
			if r.header.Get("Idempotent-Replayed") == "" {
				require.Nil(t, executed, "two executions answered 201")
				executed = r
			}
		case http.StatusConflict:
			require.Equal(t, "request_in_progress", r.code(t))
			require.NotEmpty(t, r.header.Get("Retry-After"))
		default:
			t.Fatalf("unexpected answer %d: %s", r.status, r.body)
		}
	}
	require.NotNil(t, executed)
	for _, r := range replies {
		if r.status == http.StatusCreated {
			require.Equal(t, executed.body, r.body)
		}
	}
	e.requirePaidOnce(alice, inv, 5000, decode(t, executed))
	e.requireReplays(alice, key, body, executed)
}

// TestDuplicatesWhileTheChargeIsHeld: while the first execution waits on the gateway, every
// duplicate gets 409 with Retry-After and changes nothing; after it finishes they replay.
func TestDuplicatesWhileTheChargeIsHeld(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{})
	inv := e.createInvoice(alice, 5000)
	key, body := newKey(), paymentBody(inv, 2500)
	gate := e.points.Block(chaos.ChargeAfter)
	var first *reply
	g := crash.Start(func() { first = e.do("POST", "/payments", alice, key, body) })
	<-gate.Reached()

	for _, r := range e.sendTogether(10, "POST", "/payments", alice, key, body) {
		require.Equal(t, http.StatusConflict, r.status, string(r.body))
		require.Equal(t, "request_in_progress", r.code(t))
		require.NotEmpty(t, r.header.Get("Retry-After"))
	}
	gate.Release()
	require.False(t, g.Wait())
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	for _, r := range e.sendTogether(10, "POST", "/payments", alice, key, body) {
		require.Equal(t, http.StatusCreated, r.status)
		require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
		require.Equal(t, first.body, r.body)
	}
	e.requirePaidOnce(alice, inv, 5000, decode(t, first))
}

// TestConcurrentPaymentsStayWithinBalance: two payments of one invoice under different keys,
// together above its amount, the second checking the balance while the first holds the invoice
// locked with its payment written but not committed. Once the lock is granted the second must
// see the first's payment and be refused (422 amount_exceeds_balance) before anything is
// charged. Otherwise the card is charged for a payment that can never be recorded (the invoice's
// paid-within-amount CHECK then fails the record phase on every attempt).
func TestConcurrentPaymentsStayWithinBalance(t *testing.T) {
	t.Parallel()
	e := newChaosEnv(t, chaosOpts{})
	inv := e.createInvoice(alice, 5000)
	gate := e.points.Block(chaos.AfterStep(payments.OpCreatePayment, "payment_created"))
	var first, second *reply
	a := crash.Start(func() { first = e.do("POST", "/payments", alice, newKey(), paymentBody(inv, 3000)) })
	<-gate.Reached()
	b := crash.Start(func() { second = e.do("POST", "/payments", alice, newKey(), paymentBody(inv, 3000)) })
	e.waitForLockWait()
	gate.Release()
	require.False(t, a.Wait())
	require.False(t, b.Wait())

	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	require.Equal(t, 1, e.sim.TotalCharges(),
		"the second payment passed the balance check and was charged (answer %d %s): createPaymentRow "+
			"(examples/payments/payments.go) sums the payments in its statement's snapshot, taken before "+
			"FOR UPDATE OF i waited for the first payment's transaction, so it does not see that payment", second.status, second.body)
	require.Equal(t, http.StatusUnprocessableEntity, second.status, string(second.body))
	require.Equal(t, "amount_exceeds_balance", second.code(t))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payments`), "a refused payment leaves no row")
	require.Equal(t, float64(3000), e.do("GET", "/invoices/"+inv, alice, "", "").json(t)["paid"])
}

// waitForLockWait waits until some session of the test's database waits on a lock.
func (e *chaosEnv) waitForLockWait() {
	e.t.Helper()
	require.Eventually(e.t, func() bool {
		return e.count(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	}, 10*time.Second, 5*time.Millisecond, "no session started waiting on a lock")
}
