// Package gatewaytest is the conformance suite every gateway.Gateway adapter runs: the
// behaviour the saga engine relies on, checked against the adapter's real backend.
package gatewaytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

// Opts describe what the backend behind the adapter can do, so the suite checks what it can
// faithfully check and skips the rest with a reason.
type Opts struct {
	// NoDeduplication says the backend accepts idempotency keys but does not really
	// de-duplicate (stripe-mock), so the same-key test is skipped. Defaults to false.
	NoDeduplication bool
	// ChargesFor, when set, counts the charges the backend holds for a reference, so the
	// suite can check that a repeated key created nothing. Defaults to nil.
	ChargesFor func(reference string) int
	// Declining, when set, returns a gateway on the same kind of backend that declines
	// amount. Defaults to nil: the decline test is skipped.
	Declining func(t *testing.T) (gw gateway.Gateway, amount int64)
	// Slow, when set, returns a gateway whose charges take much longer than a second, to
	// check that a context deadline cuts a call short. Defaults to nil: only an already
	// cancelled context is checked.
	Slow func(t *testing.T) gateway.Gateway
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
	ctxFor := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return ctx
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
		require.Equal(t, gateway.OutcomeSucceeded, gateway.Classify(charge, err))
	})

	t.Run("SameKeyChargesOnce", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t)
		if !gw.Capabilities().IdempotencyKeys {
			t.Skip("gateway does not support idempotency keys")
		}
		if o.NoDeduplication {
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
		require.Equal(t, gateway.OutcomeDeclined, gateway.Classify(charge, err))
	})

	t.Run("InvalidIsPermanent", func(t *testing.T) {
		t.Parallel()
		if o.NoValidation {
			t.Skip("backend does not validate charges")
		}
		gw := newGateway(t)
		p := params(0)
		charge, err := gw.Charge(ctxFor(t), p)
		require.Error(t, err)
		require.Nil(t, charge)
		require.Equal(t, gateway.OutcomePermanent, gateway.Classify(charge, err))
	})

	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		gw := newGateway(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		charge, err := gw.Charge(ctx, params(1000))
		require.Error(t, err)
		require.Nil(t, charge)
		require.True(t, errors.Is(err, context.Canceled), "error should say the context was cancelled: %v", err)
		outcome := gateway.Classify(charge, err)
		require.Contains(t, []gateway.Outcome{gateway.OutcomeRetryable, gateway.OutcomeAmbiguous}, outcome)
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
		require.Equal(t, gateway.OutcomeAmbiguous, gateway.Classify(charge, err),
			"a call cut short after sending may have charged")
	})
}
