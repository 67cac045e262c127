package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// incomplete is a payment gateway whose Kind lacks its functions.
type incomplete struct {
	gateway.Effect[gateway.ChargeParams, gateway.Charge]
	kind *gateway.Kind[gateway.ChargeParams, gateway.Charge]
}

func (e incomplete) Kind() *gateway.Kind[gateway.ChargeParams, gateway.Charge] { return e.kind }

// An effect whose Kind cannot tell the engine what it needs sends nothing: a permanent refusal,
// recorded as certainly not done.
func TestExecuteRefusesAnIncompleteKind(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	for name, kind := range map[string]*gateway.Kind[gateway.ChargeParams, gateway.Charge]{
		"nil":         nil,
		"no name":     {Keys: gateway.Charges.Keys, Verdict: gateway.Charges.Verdict, Match: gateway.Charges.Match, Recorded: gateway.Charges.Recorded},
		"no recorded": {Name: "charge", Keys: gateway.Charges.Keys, Verdict: gateway.Charges.Verdict, Match: gateway.Charges.Match},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var j gatewaytest.Journal
			e := incomplete{Effect: s.Gateway(), kind: kind}
			charge, err := gateway.Execute(context.Background(), &j, e, params("payment:incomplete-"+name, 100), nil)
			require.Nil(t, charge)
			require.Error(t, err)
			require.False(t, phases.IsRetryable(err), "a programming error: %v", err)
			require.Equal(t, []phases.CallOutcome{failedBefore}, j.Outcomes())
		})
	}
	require.Zero(t, s.TotalCharges())
}

// The payment gateway is an Effect like any other, of the kind Charges.
func TestGatewayIsAnEffect(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	s.LoseNext(1)
	var e gateway.Effect[gateway.ChargeParams, gateway.Charge] = s.Gateway()
	require.Same(t, gateway.Charges, e.Kind())
	p := params(gateway.DeriveKey("payment", "as-an-effect"), 100)
	charge, err := gateway.Execute(ctxFor(t), nil, e, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}
