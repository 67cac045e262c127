package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// A send whose answer never comes is given up at the adapter's per-request timeout, and the
// same call resolves it (here by inquiry) in the time left: a lost answer does not use the whole
// call budget, nor does it leave the effect to the key's next attempt.
func TestExecuteRequestTimeoutLeavesTimeToResolve(t *testing.T) {
	t.Parallel()
	off := false
	s := sim.New(&sim.Config{Idempotency: &off, Faults: sim.Faults{Latency: time.Minute}})
	gw := trace(s.Gateway())
	caps := s.Gateway().Capabilities()
	caps.RequestTimeout = 200 * time.Millisecond
	gw.caps = &caps
	p := params(gateway.DeriveKey("payment", "hung-answer"), 100)
	var j gatewaytest.Journal

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	charge, err := gateway.Execute(ctx, &j, gw, p, fast(5))
	require.NoError(t, err, "resolved within the call, after %s", time.Since(start))
	require.Less(t, time.Since(start), 5*time.Second, "the hung send is cut at the request timeout")
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, []string{"inquire", "charge", "inquire"}, gw.list(), "found by inquiry, not sent again")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
}
