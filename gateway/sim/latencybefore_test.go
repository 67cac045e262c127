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
	s := sim.New(&sim.Config{Faults: sim.Faults{LatencyBefore: hold}})
	for name, gw := range map[string]gateway.Gateway{"in-process": s.Gateway(), "HTTP": newClient(t, s)} {
		require.Equal(t, hold, gw.Capabilities().MaxInFlight, name)
		p := chargeParams("payment:held-"+name, 100)
		ctx, cancel := context.WithTimeout(context.Background(), hold/4)
		_, err := gw.Send(ctx, p)
		cancel()
		require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err), "%s: %v", name, err)

		found, err := gw.Inquire(context.Background(), p.Reference)
		require.NoError(t, err)
		require.Empty(t, found, "%s: not landed yet", name)
		require.Eventually(t, func() bool { return s.ChargesFor(p.Reference) == 1 }, 5*time.Second, 10*time.Millisecond, name)
	}
}

func TestLatencyBeforeDelaysTheAnswer(t *testing.T) {
	t.Parallel()
	const hold = 200 * time.Millisecond
	s := sim.New(&sim.Config{Faults: sim.Faults{LatencyBefore: hold, LatencyJitter: 50 * time.Millisecond}})
	c := newClient(t, s)
	require.Equal(t, hold+50*time.Millisecond, c.Capabilities().MaxInFlight, "the hold plus its jitter")
	start := time.Now()
	charge, err := c.Send(context.Background(), chargeParams("payment:held", 100))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.GreaterOrEqual(t, time.Since(start), hold)
}

// The declared window never drops below what a request already sent may still take to land: a
// request held under a 1.2s setting keeps the window at 1.2s after the setting drops to 100ms,
// until it has landed (otherwise a caller would trust an empty inquiry while it is on its way).
func TestInFlightWindowCoversRequestsAlreadySent(t *testing.T) {
	t.Parallel()
	const hold, shrunk = 1200 * time.Millisecond, 100 * time.Millisecond
	s := sim.New(&sim.Config{Faults: sim.Faults{LatencyBefore: hold}})
	c := newClient(t, s)
	p := chargeParams("payment:held-then-shrunk", 100)
	ctx, cancel := context.WithTimeout(context.Background(), hold/4)
	_, err := c.Send(ctx, p)
	cancel()
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err), "%v", err)

	_, err = s.SetFaults(func(st *sim.Settings) { st.LatencyBefore = shrunk })
	require.NoError(t, err)
	for name, gw := range map[string]gateway.Gateway{"in-process": s.Gateway(), "HTTP": c} {
		require.Equal(t, hold, gw.Capabilities().MaxInFlight, "%s: a request held 1.2s is still on its way", name)
	}
	require.Eventually(t, func() bool { return s.ChargesFor(p.Reference) == 1 }, 5*time.Second, 10*time.Millisecond)
	for name, gw := range map[string]gateway.Gateway{"in-process": s.Gateway(), "HTTP": c} {
		require.Equal(t, shrunk, gw.Capabilities().MaxInFlight, "%s: once it landed, the current setting", name)
	}
}
