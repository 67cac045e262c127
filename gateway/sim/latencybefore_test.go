package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// latency-before holds a request before its charge exists: a caller that gave up is charged
// later anyway, and an inquiry made meanwhile finds nothing.
func TestLatencyBeforeChargesAfterTheCallerGaveUp(t *testing.T) {
	t.Parallel()
	const hold = time.Second
	s := sim.New(&sim.Config{LatencyBefore: hold})
	for name, gw := range map[string]gateway.Gateway{"in-process": s.Gateway(), "HTTP": newClient(t, s)} {
		require.Equal(t, hold, gw.Capabilities().MaxInFlight, name)
		p := chargeParams("payment:held-"+name, 100)
		ctx, cancel := context.WithTimeout(context.Background(), hold/4)
		_, err := gw.Charge(ctx, p)
		cancel()
		require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(nil, err), "%s: %v", name, err)

		found, err := gw.Inquire(context.Background(), p.Reference)
		require.NoError(t, err)
		require.Empty(t, found, "%s: not landed yet", name)
		require.Eventually(t, func() bool { return s.ChargesFor(p.Reference) == 1 }, 5*time.Second, 10*time.Millisecond, name)
	}
}

func TestLatencyBeforeDelaysTheAnswer(t *testing.T) {
	t.Parallel()
	const hold = 200 * time.Millisecond
	s := sim.New(&sim.Config{LatencyBefore: hold, LatencyJitter: 50 * time.Millisecond})
	c := newClient(t, s)
	require.Equal(t, hold+50*time.Millisecond, c.Capabilities().MaxInFlight, "the hold plus its jitter")
	start := time.Now()
	charge, err := c.Charge(context.Background(), chargeParams("payment:held", 100))
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.GreaterOrEqual(t, time.Since(start), hold)
}
