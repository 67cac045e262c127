// Package gatewaytest is the conformance suite every gateway.Gateway adapter runs: the
// behaviour the saga engine relies on, checked against the adapter's real backend. It also
// holds Journal, an in-memory call journal for tests of code that calls gateway.Execute.
package gatewaytest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
)

// Opts describe what the backend behind the adapter can do, so the suite checks what it can
// faithfully check and skips the rest with a reason.
type Opts struct {
	// Stateless says the backend answers every request afresh (stripe-mock): it accepts keys
	// without de-duplicating and reads back canned charges, so the same-key and read-back
	// tests are skipped. Defaults to false.
	Stateless bool
	// ChargesFor, when set, counts the charges the backend holds for a reference, so the
	// suite can check that nothing was charged twice. Defaults to nil.
	ChargesFor func(reference string) int
	// Declining, when set, returns a gateway on the same kind of backend that declines
	// amount. Defaults to nil: the decline test is skipped.
	Declining func(t *testing.T) (gw gateway.Gateway, amount int64)
	// Slow, when set, returns a gateway whose charges take much longer than a second, to
	// check that a context deadline cuts a call short. Defaults to nil: only an already
	// cancelled context is checked.
	Slow func(t *testing.T) gateway.Gateway
	// Pending, when set, returns a gateway on a backend whose next charge is created pending
	// and turns final (succeeded) within a few seconds, and ChargesFor for it. Defaults to nil:
	// the pending tests are skipped.
	Pending func(t *testing.T) (gw gateway.Gateway, chargesFor func(reference string) int)
	// Lossy, when set, returns a gateway on a backend that charges and then loses the answer
	// of its next charge, and ChargesFor for it. Defaults to nil: the lost-response test is
	// skipped.
	Lossy func(t *testing.T) (gw gateway.Gateway, chargesFor func(reference string) int)
	// InFlight, when set, returns a gateway on a backend that holds every charge request for
	// about hold before acting on it (Capabilities().MaxInFlight covers it), and ChargesFor for
	// it. Defaults to nil: the in-flight window test is skipped.
	InFlight func(t *testing.T, hold time.Duration) (gw gateway.Gateway, chargesFor func(reference string) int)
	// NoValidation says the backend accepts invalid charges (a zero amount), so the
	// permanent-error test is skipped. Defaults to false.
	NoValidation bool
	// Currency is the currency charged. Defaults to "USD".
	Currency string
}

// Run checks the adapter newGateway builds. Each subtest gets its own gateway and runs in
// parallel.
func Run(t *testing.T, newGateway func(t *testing.T) gateway.Gateway, opts *Opts) {
	var o Opts
	if opts != nil {
		o = *opts
	}
	if o.Currency == "" {
		o.Currency = "USD"
	}
	params := func(amount int64) gateway.ChargeParams {
		ref := gateway.DeriveKey("payment", uuid.NewString())
		return gateway.ChargeParams{Amount: amount, Currency: o.Currency, Reference: ref, IdempotencyKey: ref}
	}

	t.Run("ChargeSucceeds", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t)
		p := params(2000)
		charge, err := gw.Charge(ctxFor(t), p)
		require.NoError(t, err)
		require.NotNil(t, charge)
		require.NotEmpty(t, charge.ID)
		require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
		require.Equal(t, p.Amount, charge.Amount)
		require.Equal(t, p.Reference, charge.Reference)
		require.Equal(t, phases.CallOutcomeSucceeded, gateway.Classify(charge, err))
	})

	t.Run("SameKeyChargesOnce", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t)
		if !gw.Capabilities().IdempotencyKeys {
			t.Skip("gateway does not support idempotency keys")
		}
		if o.Stateless {
			t.Skip("backend accepts keys but does not de-duplicate")
		}
		p := params(1500)
		first, err := gw.Charge(ctxFor(t), p)
		require.NoError(t, err)
		second, err := gw.Charge(ctxFor(t), p)
		require.NoError(t, err)
		require.Equal(t, first, second, "a repeated key must answer the first charge")
		if o.ChargesFor != nil {
			require.Equal(t, 1, o.ChargesFor(p.Reference))
		}
	})

	t.Run("Inquiry", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t)
		ctx := ctxFor(t)
		if !gw.Capabilities().Inquiry {
			_, err := gw.Inquire(ctx, "payment:unknown")
			require.ErrorIs(t, err, gateway.ErrUnsupported)
			return
		}
		none, err := gw.Inquire(ctx, gateway.DeriveKey("payment", uuid.NewString()))
		require.NoError(t, err)
		require.Empty(t, none)

		p := params(1200)
		charge, err := gw.Charge(ctx, p)
		require.NoError(t, err)
		found, err := gw.Inquire(ctx, p.Reference)
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.Equal(t, *charge, found[0])
	})

	t.Run("GetReadsBack", func(t *testing.T) {
		t.Parallel()
		if o.Stateless {
			t.Skip("backend reads back canned charges")
		}
		gw := newGateway(t)
		ctx := ctxFor(t)
		p := params(1300)
		charge, err := gw.Charge(ctx, p)
		require.NoError(t, err)
		got, err := gw.Get(ctx, charge.ID)
		require.NoError(t, err)
		require.Equal(t, charge, got)

		_, err = gw.Get(ctx, "ch_"+uuid.NewString()[:8])
		require.ErrorIs(t, err, gateway.ErrNotFound)
	})

	t.Run("DeclineIsAResult", func(t *testing.T) {
		t.Parallel()
		if o.Declining == nil {
			t.Skip("backend cannot be told to decline")
		}
		gw, amount := o.Declining(t)
		p := params(amount)
		charge, err := gw.Charge(ctxFor(t), p)
		require.NoError(t, err, "a decline is a result, not an error")
		require.NotNil(t, charge)
		require.Equal(t, gateway.ChargeStatusDeclined, charge.Status)
		require.Equal(t, p.Reference, charge.Reference)
		require.Equal(t, phases.CallOutcomeDeclined, gateway.Classify(charge, err))
	})

	t.Run("InvalidIsPermanent", func(t *testing.T) {
		t.Parallel()
		if o.NoValidation {
			t.Skip("backend does not validate charges")
		}
		gw := newGateway(t)
		charge, err := gw.Charge(ctxFor(t), params(0))
		require.Error(t, err)
		require.Nil(t, charge)
		require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(charge, err), "refused: nothing charged")
		require.False(t, phases.IsRetryable(err), "sending it again cannot help: %v", err)
	})

	t.Run("CancelledContextSendsNothing", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		charge, err := gw.Charge(ctx, params(1000))
		require.Error(t, err)
		require.Nil(t, charge)
		require.True(t, errors.Is(err, context.Canceled), "error should say the context was cancelled: %v", err)
		require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(charge, err), "nothing was sent: %v", err)
	})

	t.Run("DeadlineCutsCallShort", func(t *testing.T) {
		t.Parallel()
		if o.Slow == nil {
			t.Skip("backend cannot be made slow")
		}
		gw := o.Slow(t)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		charge, err := gw.Charge(ctx, params(1000))
		require.Error(t, err)
		require.Nil(t, charge)
		require.Less(t, time.Since(start), 5*time.Second, "the call must end soon after its deadline")
		require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(charge, err),
			"a call cut short after sending may have charged")
	})

	t.Run("PendingIsNeverSentTwice", func(t *testing.T) {
		t.Parallel()
		if o.Pending == nil {
			t.Skip("backend cannot be told to leave a charge pending")
		}
		backend, chargesFor := o.Pending(t)
		gw := &counted{Gateway: backend}
		p := params(1700)

		// An attempt whose charge is answered pending records it and leaves it for later.
		var j Journal
		charge, err := gateway.Execute(ctxFor(t), &j, gw, p, &gateway.ExecuteOpts{Retries: -1})
		require.Nil(t, charge)
		require.ErrorIs(t, err, gateway.ErrPending)
		require.True(t, phases.IsRetryable(err), "pending is transient: %v", err)
		calls := j.Calls()
		require.Len(t, calls, 1)
		require.Equal(t, phases.CallOutcomePending, calls[0].Outcome)
		require.NotEmpty(t, calls[0].ProviderID)

		// The next attempts read it back until it is final, and never send it again.
		charge, err = gateway.Execute(ctxFor(t), &j, gw, p, polling)
		require.NoError(t, err)
		require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
		require.Equal(t, calls[0].ProviderID, charge.ID)
		require.Equal(t, int32(1), gw.charges.Load(), "a pending charge is a charge: never sent again")
		require.Equal(t, 1, chargesFor(p.Reference))
		require.Equal(t, []phases.CallOutcome{phases.CallOutcomePending, phases.CallOutcomeSucceeded}, j.Outcomes())

		got, err := backend.Get(ctxFor(t), charge.ID)
		require.NoError(t, err)
		require.Equal(t, gateway.ChargeStatusSucceeded, got.Status, "Get shows it turned final")
	})

	t.Run("LostResponseIsResolved", func(t *testing.T) {
		t.Parallel()
		if o.Lossy == nil {
			t.Skip("backend cannot be told to lose an answer")
		}
		gw, chargesFor := o.Lossy(t)
		p := params(1900)
		var j Journal
		charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast)
		caps := gw.Capabilities()
		if !caps.Inquiry && !caps.IdempotencyKeys {
			require.ErrorIs(t, err, gateway.ErrCannotResolve, "nothing can tell: never guess")
			require.True(t, phases.IsOutcomeUnknown(err))
			require.Equal(t, []phases.CallOutcome{phases.CallOutcomeUnknown}, j.Outcomes())
			require.Equal(t, 1, chargesFor(p.Reference))
			return
		}
		require.NoError(t, err)
		require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
		require.Equal(t, 1, chargesFor(p.Reference), "resolved by inquiry or the same key: one charge")
		require.Equal(t, []phases.CallOutcome{phases.CallOutcomeSucceeded}, j.Outcomes())
	})

	t.Run("EmptyInquiryInsideInFlightWindowIsNotTrusted", func(t *testing.T) {
		t.Parallel()
		if o.InFlight == nil {
			t.Skip("backend cannot hold a request in flight")
		}
		const hold = time.Second
		gw, chargesFor := o.InFlight(t, hold)
		caps := gw.Capabilities()
		require.GreaterOrEqual(t, caps.MaxInFlight, hold, "the gateway declares how long a request may take to land")
		p := params(2100)

		// A first execution sends and gives up while its request is on its way (a zombie).
		ctx, cancel := context.WithTimeout(context.Background(), hold/4)
		_, err := gw.Charge(ctx, p)
		cancel()
		require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(nil, err), "%v", err)
		var j Journal
		now := time.Now() // the zombie's lease ends: it sends nothing more
		j.Add(phases.CallRecord{StartedAt: now, Deadline: now})

		switch {
		case !caps.Inquiry && caps.IdempotencyKeys:
			// The same key, re-sent, lands after the zombie's and is answered with its charge.
			charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast)
			require.NoError(t, err)
			require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
			require.Equal(t, 1, chargesFor(p.Reference))
			return
		case !caps.Inquiry:
			_, err := gateway.Execute(ctxFor(t), &j, gw, p, fast)
			require.ErrorIs(t, err, gateway.ErrCannotResolve, "nothing can tell: never guess")
			require.Eventually(t, func() bool { return chargesFor(p.Reference) == 1 }, 10*time.Second, 10*time.Millisecond)
			return
		}

		// The next one finds nothing yet; with no time to wait it sends nothing and says when.
		short, cancel := context.WithTimeout(context.Background(), hold/2)
		defer cancel()
		charge, err := gateway.Execute(short, &j, gw, p, fast)
		require.Nil(t, charge)
		require.ErrorIs(t, err, gateway.ErrInFlight)
		var after *phases.RetryAfterError
		require.ErrorAs(t, err, &after)
		require.Positive(t, after.After)
		require.Equal(t, phases.CallOutcomeFailedBefore, j.Outcomes()[1], "this attempt sent nothing")
		require.Zero(t, chargesFor(p.Reference), "the zombie's request has not landed yet")

		// With time to wait, it waits out the window, finds the zombie's charge, sends nothing.
		charge, err = gateway.Execute(ctxFor(t), &j, gw, p, fast)
		require.NoError(t, err)
		require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
		require.Equal(t, 1, chargesFor(p.Reference), "one charge: the zombie's")
	})
}

// fast retries at once; polling reads a pending charge every 50ms for up to 10s.
var (
	fast    = &gateway.ExecuteOpts{RetryDelay: func(int) time.Duration { return time.Millisecond }}
	polling = &gateway.ExecuteOpts{Retries: 200, RetryDelay: func(int) time.Duration { return 50 * time.Millisecond }}
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counted counts the charges sent through a gateway.
type counted struct {
	gateway.Gateway
	charges atomic.Int32
}

func (c *counted) Charge(ctx context.Context, p gateway.ChargeParams) (*gateway.Charge, error) {
	c.charges.Add(1)
	return c.Gateway.Charge(ctx, p)
}
