// Package gatewaytest is the conformance suite every adapter runs, whatever its effect: the
// behaviour gateway.Execute relies on, checked against the adapter's real backend.
// RunEffect runs it on any gateway.Effect, Run on a payment gateway.Gateway. It also holds
// Journal, an in-memory call journal for tests of code that calls gateway.Execute.
package gatewaytest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
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
	// Hanging, when set, returns a gateway on a backend that charges on its next request and
	// never answers it, declaring a per-request timeout under a second, and ChargesFor for it.
	// Defaults to nil: the request-timeout test is skipped.
	Hanging func(t *testing.T) (gw gateway.Gateway, chargesFor func(reference string) int)
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

// Run checks the payment adapter newGateway builds: RunEffect with charges of opts.Currency,
// and that its Kind is gateway.Charges. Each subtest gets its own gateway and runs in parallel.
func Run(t *testing.T, newGateway func(t *testing.T) gateway.Gateway, opts *Opts) {
	var o Opts
	if opts != nil {
		o = *opts
	}
	if o.Currency == "" {
		o.Currency = "USD"
	}
	charge := func(amount int64) func(string) gateway.ChargeParams {
		return func(ref string) gateway.ChargeParams {
			return gateway.ChargeParams{Amount: amount, Currency: o.Currency, Reference: ref, IdempotencyKey: ref}
		}
	}
	eo := &EffectOpts[gateway.ChargeParams, gateway.Charge]{
		NewParams: charge(2000),
		Stateless: o.Stateless,
		Count:     o.ChargesFor,
		Pending:   o.Pending,
		Lossy:     o.Lossy,
		Hanging:   o.Hanging,
		Slow:      o.Slow,
		InFlight:  o.InFlight,
	}
	if !o.NoValidation {
		eo.Invalid = charge(0)
	}
	if o.Declining != nil {
		eo.Declining = func(t *testing.T, ref string) (gateway.Gateway, gateway.ChargeParams) {
			gw, amount := o.Declining(t)
			return gw, charge(amount)(ref)
		}
	}
	RunEffect(t, func(t *testing.T) gateway.Gateway {
		gw := newGateway(t)
		require.Same(t, gateway.Charges, gw.Kind(), "a payment gateway's Kind is gateway.Charges")
		return gw
	}, eo)
}
