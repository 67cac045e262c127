package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// The provider's declared in-flight window shrinks between an attempt's send and the next
// attempt (its settings changed, or two processes are configured differently during a rolling
// deploy). The first attempt's request is held 1.2s before it lands and its answer never comes;
// it was sent under a declared window of 1.5s. The window then shrinks to 100ms. The next
// attempt, 100ms after the first went quiet, must not take an empty inquiry for "no charge":
// it waits by the window the first attempt sent under, finds its charge and sends nothing.
func TestExecuteWindowShrinksAfterTheSend(t *testing.T) {
	t.Parallel()
	const hold, declared, shrunk = 1200 * time.Millisecond, 1500 * time.Millisecond, 100 * time.Millisecond
	off := false
	s := sim.New(&sim.Config{Idempotency: &off, Faults: sim.Faults{LatencyBefore: hold}})
	url, arrived := serveArrivals(t, s)
	c, err := sim.NewClient(url, &sim.ClientOpts{HTTPClient: &http.Client{Transport: giveUpOnArrival{arrived}}})
	require.NoError(t, err)
	gw := trace(c)
	gw.caps = &gateway.Capabilities{Inquiry: true, MaxInFlight: declared}
	p := params("payment:shrunk-window", 100)
	var j gatewaytest.Journal

	// The first attempt's call has too little time left to outwait the window: it gives up,
	// its outcome unknown.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = gateway.Execute(ctx, &j, gw, p, fast(5))
	cancel()
	require.ErrorIs(t, err, gateway.ErrInFlight)
	require.Equal(t, []phases.CallOutcome{unknown}, j.Outcomes())
	require.Equal(t, declared, j.Calls()[0].MaxInFlight, "the window it sent under is journaled")
	require.Equal(t, 0, s.ChargesFor(p.Reference), "its request is still on its way")

	gw.caps = &gateway.Capabilities{Inquiry: true, MaxInFlight: shrunk}
	require.Eventually(t, func() bool { return time.Since(*j.Calls()[0].EndedAt) > shrunk }, time.Second, time.Millisecond)
	second := trace(c)
	second.caps = gw.caps
	charge, err := gateway.Execute(ctxFor(t), &j, second, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.NotContains(t, second.list(), "charge", "the first attempt's charge was found, not made again")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

// The same for an execution that died mid-call: it journaled the window before it sent, and
// its lease ended at once. The next execution, under a shorter window, waits by the journaled one.
func TestExecuteDeadAttemptsWindowOutlastsAShorterOne(t *testing.T) {
	t.Parallel()
	const hold, declared, shrunk = 1200 * time.Millisecond, 1500 * time.Millisecond, 100 * time.Millisecond
	s, c, arrived := slowNetwork(t, hold)
	gw := trace(c)
	gw.caps = &gateway.Capabilities{Inquiry: true, MaxInFlight: shrunk}
	p := params("payment:dead-window", 100)
	sendAndGiveUp(t, c, arrived, p)
	var j gatewaytest.Journal
	dead := crashed(time.Now())
	dead.MaxInFlight = declared
	j.Add(dead)

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.NotContains(t, gw.list(), "charge")
	require.Eventually(t, func() bool { return s.ChargesFor(p.Reference) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Never(t, func() bool { return s.ChargesFor(p.Reference) > 1 }, 2*hold, 50*time.Millisecond)
}

// A window that cannot be journaled is never sent under: nothing is charged, and the attempt
// is recorded as certainly not done.
func TestExecuteSendsNothingWhenTheWindowCannotBeJournaled(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := trace(s.Gateway())
	p := params("payment:unjournaled", 100)
	var j gatewaytest.Journal
	lost := errors.New("lease lost")
	j.FailDeclare(lost)

	_, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.ErrorIs(t, err, lost)
	require.Equal(t, failedBefore, gateway.Classify(err))
	require.NotContains(t, gw.list(), "charge")
	require.Equal(t, 0, s.TotalCharges())
	require.Equal(t, []phases.CallOutcome{failedBefore}, j.Outcomes())
}
