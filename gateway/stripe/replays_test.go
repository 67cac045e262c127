package stripe_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/stripe"
	"github.com/pgsaga/pgsaga/phases"
)

// Stripe replays a key's first answer for good, so re-sending the key can settle neither a
// pending PaymentIntent nor a 500. The PaymentIntent is read back instead.

func TestPendingIsReadBackNotResent(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	f.set(func(f *fakeStripe) { f.pendingNext = 1 })
	p := params("payment:fake-pending", 700)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, newGateway(t, f.url()), p, polling)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, 1, f.postCount(), "a pending PaymentIntent is never sent again")
	require.Equal(t, 1, f.chargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeSucceeded}, j.Outcomes())
}

func TestServerErrorAfterChargeIsReadBack(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	f.set(func(f *fakeStripe) { f.fail500AfterNext = 1 })
	p := params("payment:fake-500-after", 700)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, newGateway(t, f.url()), p, fast)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, p.Reference, charge.Reference)
	require.Equal(t, 1, f.postCount(), "found by reading back: the key is not sent again")
	require.Equal(t, 1, f.chargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeSucceeded}, j.Outcomes())
}

// A 500 before anything was charged cannot be told apart from one after (search lags): the call
// stays unknown, never retried as certainly not done, and never charged under another key. A
// re-sent key is a replay that charges nothing; past the key's window it parks.
func TestServerErrorBeforeChargeStaysUnknown(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	f.set(func(f *fakeStripe) { f.fail500BeforeNext = 1 })
	gw := newGateway(t, f.url())
	p := params("payment:fake-500-before", 700)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast)
	require.Nil(t, charge)
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err), "%v", err)
	require.True(t, phases.IsRetryable(err))
	require.Zero(t, f.chargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeUnknown}, j.Outcomes())

	// A day later the key is past Stripe's window: nothing more is sent, an operator settles it.
	posts := f.postCount()
	_, err = gateway.Execute(ctxFor(t), &j, gw, p, &gateway.ExecuteOpts{Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "key retention window")
	require.True(t, phases.IsOutcomeUnknown(err))
	require.Equal(t, posts, f.postCount())
}

// A key Stripe refuses as used with other parameters (or on another endpoint) reached Stripe
// before, and that request may have charged: it is read back by reference, and taken only if it
// is this charge; otherwise the attempt is unknown (parked once the key is past its window), or
// a mismatch, and never a refusal that compensates.
func TestKeyUsedWithOtherParameters(t *testing.T) {
	t.Parallel()
	refused := apiError(400, "idempotency_error", "",
		"Keys for idempotent requests can only be used with the same parameters they were first used with.", "", nil)
	later := &gateway.ExecuteOpts{Now: func() time.Time { return time.Now().Add(25 * time.Hour) }}

	t.Run("found", func(t *testing.T) {
		t.Parallel()
		f := newFakeStripe(t)
		gw := newGateway(t, f.url())
		p := params("payment:key-refused-found", 700)
		first, err := gw.Send(ctxFor(t), p)
		require.NoError(t, err)
		f.set(func(f *fakeStripe) { f.answers[p.IdempotencyKey] = refused })

		var j gatewaytest.Journal
		j.Add(phases.CallRecord{StartedAt: time.Now()})
		charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast)
		require.NoError(t, err)
		require.Equal(t, first.ID, charge.ID, "the first request's PaymentIntent")
		require.Equal(t, 1, f.chargesFor(p.Reference))
	})

	t.Run("not found", func(t *testing.T) {
		t.Parallel()
		f := newFakeStripe(t)
		gw := newGateway(t, f.url())
		p := params("payment:key-refused-missing", 700)
		// The first request went elsewhere (the Charges API): no PaymentIntent to find.
		f.set(func(f *fakeStripe) { f.answers[p.IdempotencyKey] = refused })

		var j gatewaytest.Journal
		j.Add(phases.CallRecord{StartedAt: time.Now()})
		charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast)
		require.Nil(t, charge)
		require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err), "%v", err)
		require.True(t, phases.IsRetryable(err), "not a refusal that compensates: %v", err)

		_, err = gateway.Execute(ctxFor(t), &j, gw, p, later)
		require.ErrorIs(t, err, gateway.ErrCannotResolve)
		require.ErrorContains(t, err, "key retention window")
		require.Zero(t, f.chargesFor(p.Reference))
	})

	t.Run("another amount", func(t *testing.T) {
		t.Parallel()
		f := newFakeStripe(t)
		gw := newGateway(t, f.url())
		p := params("payment:key-refused-amount", 700)
		_, err := gw.Send(ctxFor(t), p)
		require.NoError(t, err)
		f.set(func(f *fakeStripe) { f.answers[p.IdempotencyKey] = refused })

		p.Amount = 900
		charge, err := gateway.Execute(ctxFor(t), &gatewaytest.Journal{}, gw, p, fast)
		require.Nil(t, charge, "a PaymentIntent of 700 is not the charge of 900")
		require.ErrorIs(t, err, gateway.ErrCannotResolve)
		require.ErrorContains(t, err, "does not match the intent")
		require.True(t, phases.IsOutcomeUnknown(err), "parked, not compensated")
		require.Equal(t, 1, f.chargesFor(p.Reference))
	})
}

// A call journal may hold the id of a charge made through the Charges API, recorded pending: it
// is still read back to its end, and never sent again as a PaymentIntent.
func TestChargesAPIPendingIsFollowed(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	p := params("payment:charges-api", 100)
	id := f.addCharge(p.Reference, "pending", 300*time.Millisecond)
	var j gatewaytest.Journal
	j.Add(phases.CallRecord{StartedAt: time.Now().Add(-time.Minute), Outcome: phases.CallOutcomePending, ProviderID: id})

	charge, err := gateway.Execute(ctxFor(t), &j, newGateway(t, f.url()), p, polling)
	require.NoError(t, err)
	require.Equal(t, id, charge.ID)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Zero(t, f.postCount(), "nothing sent")

	_, err = newGateway(t, f.url()).Get(ctxFor(t), "ch_missing")
	require.ErrorIs(t, err, gateway.ErrNotFound)
}

func TestConformanceFakeStripe(t *testing.T) {
	t.Parallel()
	fake := func(t *testing.T, change func(*fakeStripe)) (*fakeStripe, gateway.Gateway) {
		f := newFakeStripe(t)
		f.set(change)
		return f, newGateway(t, f.url())
	}
	shared := newFakeStripe(t)
	gatewaytest.Run(t, func(t *testing.T) gateway.Gateway { return newGateway(t, shared.url()) }, &gatewaytest.Opts{
		ChargesFor: shared.chargesFor,
		Declining: func(t *testing.T) (gateway.Gateway, int64) {
			_, gw := fake(t, func(f *fakeStripe) { f.declineOver = 1000 })
			return gw, 1001
		},
		Slow: func(t *testing.T) gateway.Gateway {
			_, gw := fake(t, func(f *fakeStripe) { f.latency = time.Minute })
			return gw
		},
		Pending: func(t *testing.T) (gateway.Gateway, func(string) int) {
			f, gw := fake(t, func(f *fakeStripe) { f.pendingNext = 1 })
			return gw, f.chargesFor
		},
		Lossy: func(t *testing.T) (gateway.Gateway, func(string) int) {
			f, gw := fake(t, func(f *fakeStripe) { f.loseNext = 1 })
			return gw, f.chargesFor
		},
		Hanging: func(t *testing.T) (gateway.Gateway, func(string) int) {
			f := newFakeStripe(t)
			f.set(func(f *fakeStripe) { f.hangNext = 1 })
			return newGatewayWith(t, &stripe.Config{BackendURL: f.url(), RequestTimeout: 200 * time.Millisecond}), f.chargesFor
		},
	})
}

var (
	fast    = &gateway.ExecuteOpts{Retries: 2, RetryDelay: func(int) time.Duration { return time.Millisecond }}
	polling = &gateway.ExecuteOpts{Retries: 500, RetryDelay: func(int) time.Duration { return 20 * time.Millisecond }}
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
