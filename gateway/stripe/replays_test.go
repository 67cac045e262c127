package stripe_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/phases"
)

// Issue 9, break 11: Stripe replays a key's first answer for good, so re-sending the key can
// settle neither a pending charge nor a 500. The charge is read back instead.

func TestPendingIsReadBackNotResent(t *testing.T) {
	t.Parallel()
	f := newFakeStripe(t)
	f.set(func(f *fakeStripe) { f.pendingNext = 1 })
	p := params("payment:fake-pending", 700)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, newGateway(t, f.url()), p, polling)
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.Equal(t, 1, f.postCount(), "a pending charge is never sent again")
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
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
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
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(nil, err), "%v", err)
	require.True(t, phases.IsRetryable(err))
	require.Zero(t, f.chargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeUnknown}, j.Outcomes())

	// A day later the key is past Stripe's window: nothing more is sent, an operator settles it.
	posts := f.postCount()
	_, err = gateway.Execute(ctxFor(t), &j, gw, p, &gateway.ExecuteOpts{Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	require.ErrorIs(t, err, gateway.ErrKeyExpired)
	require.True(t, phases.IsOutcomeUnknown(err))
	require.Equal(t, posts, f.postCount())
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
