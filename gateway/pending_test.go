package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// pendingSim is a simulator without idempotency keys (a second send is a second charge) whose
// next charge is created pending for pendingFor.
func pendingSim(t *testing.T, pendingFor time.Duration, inquiry bool) *sim.Simulator {
	t.Helper()
	off := false
	s := sim.New(&sim.Config{Idempotency: &off, Inquiry: &inquiry, PendingFor: pendingFor})
	s.PendingNext(1)
	return s
}

// A charge answered pending is never sent again; it is read back by id until
// it is final.
func TestExecuteChargeAnsweredPendingIsReadBack(t *testing.T) {
	t.Parallel()
	for name, over := range map[string]bool{"in-process": false, "over HTTP": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := pendingSim(t, 300*time.Millisecond, true)
			var backend gateway.Gateway = s.Gateway()
			if over {
				backend = overHTTP(t, s)
			}
			gw := trace(backend)
			p := params("payment:pending-"+name, 100)
			var j gatewaytest.Journal

			charge, err := gateway.Execute(ctxFor(t), &j, gw, p, polling())
			require.NoError(t, err)
			require.Equal(t, gateway.StatusSucceeded, charge.Status)
			calls := gw.list()
			require.Equal(t, []string{"inquire", "charge"}, calls[:2], "a provider without keys is asked first")
			require.NotContains(t, calls[2:], "charge", "a pending charge is a charge: never sent again")
			require.Contains(t, calls[2:], "get")
			require.Equal(t, 1, s.ChargesFor(p.Reference))
			require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
		})
	}
}

// Still pending when the rounds run out: the attempt records pending with the charge's id and
// returns a transient error; the next attempts only read it back.
func TestExecutePendingAcrossAttempts(t *testing.T) {
	t.Parallel()
	s := pendingSim(t, 500*time.Millisecond, false)
	gw := trace(s.Gateway())
	p := params("payment:pending-attempts", 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(-1))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrPending)
	require.Equal(t, pending, gateway.Classify(err))
	after, ok := phases.RetryDelay(err)
	require.True(t, ok, "transient, with a poll delay")
	require.GreaterOrEqual(t, after, time.Second)
	require.True(t, phases.IsRetryable(err))
	require.False(t, phases.IsOutcomeUnknown(err))
	first := j.Calls()[0]
	require.Equal(t, pending, first.Outcome)
	require.NotEmpty(t, first.ProviderID)

	charge, err = gateway.Execute(ctxFor(t), &j, gw, p, polling())
	require.NoError(t, err)
	require.Equal(t, first.ProviderID, charge.ID)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, "charge", gw.list()[0])
	require.NotContains(t, gw.list()[1:], "charge")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{pending, succeeded}, j.Outcomes())
}

// A pending charge may turn declined: that is its final answer.
func TestExecutePendingTurnsDeclined(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{DeclineOver: 50}, PendingFor: 100 * time.Millisecond})
	s.PendingNext(1)
	charge, err := gateway.Execute(ctxFor(t), nil, s.Gateway(), params("payment:pending-declined", 100), polling())
	require.NoError(t, err)
	require.Equal(t, gateway.StatusDeclined, charge.Status)
	require.Equal(t, 1, s.TotalCharges())
}

// A pending charge found by inquiry is a charge; another one would be a
// double charge. It is followed until it is final.
func TestExecutePendingFoundByInquiryIsNotChargedAgain(t *testing.T) {
	t.Parallel()
	s := pendingSim(t, 300*time.Millisecond, true)
	p := params("payment:pending-inquiry", 100)
	_, err := s.Gateway().Send(ctxFor(t), p) // the attempt before the crash
	require.NoError(t, err)
	gw := trace(s.Gateway())
	var j gatewaytest.Journal
	j.Add(crashed(time.Now()))

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, polling())
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, "inquire", gw.list()[0])
	require.NotContains(t, gw.list(), "charge")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

// Pending past the settle window: an outcome nothing resolves, parked without compensating.
func TestExecutePendingTooLong(t *testing.T) {
	t.Parallel()
	s := pendingSim(t, time.Hour, false)
	p := params("payment:pending-long", 100)
	first, err := s.Gateway().Send(ctxFor(t), p)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusPending, first.Status)
	gw := trace(s.Gateway())
	var j gatewaytest.Journal
	recorded := time.Now().Add(-25 * time.Hour)
	j.Add(phases.CallRecord{StartedAt: recorded, EndedAt: &recorded, Outcome: pending, ProviderID: first.ID})

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(3))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "past its settle window")
	require.True(t, phases.IsOutcomeUnknown(err))
	require.Equal(t, []string{"get"}, gw.list())
	require.Equal(t, pending, j.Outcomes()[1])
	require.Equal(t, first.ID, j.Calls()[1].ProviderID)

	// A shorter window is the caller's to choose.
	var k gatewaytest.Journal
	now := time.Now().Add(-2 * time.Minute)
	k.Add(phases.CallRecord{StartedAt: now, EndedAt: &now, Outcome: pending, ProviderID: first.ID})
	_, err = gateway.Execute(ctxFor(t), &k, gw, p, &gateway.ExecuteOpts{PendingWindow: time.Minute})
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "past its settle window")
}

// A pending charge that can be read back neither by id nor by reference cannot be followed.
func TestExecutePendingWithoutReadBack(t *testing.T) {
	t.Parallel()
	s := pendingSim(t, time.Hour, false)
	gw := noGet{trace(s.Gateway())}
	charge, err := gateway.Execute(ctxFor(t), nil, gw, params("payment:pending-blind", 100), fast(3))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.Equal(t, 1, s.TotalCharges())
}

// noGet is a gateway that cannot read a charge back by id.
type noGet struct{ *traced }

func (noGet) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	return nil, fmt.Errorf("read back %q: %w", id, gateway.ErrUnsupported)
}

// A pending answer without an id cannot be read back: never sent again, parked.
func TestExecutePendingWithoutID(t *testing.T) {
	t.Parallel()
	gw := trace(anonymousPending{})
	var j gatewaytest.Journal
	charge, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:pending-anonymous", 100), fast(5))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.Equal(t, []string{"charge"}, gw.list())
	require.Equal(t, []phases.CallOutcome{pending}, j.Outcomes())
}

// anonymousPending answers every charge pending, without an id.
type anonymousPending struct{ gateway.Gateway }

func (anonymousPending) Kind() *gateway.Kind[gateway.ChargeParams, gateway.Charge] {
	return gateway.Charges
}

func (anonymousPending) Capabilities() gateway.Capabilities { return gateway.Capabilities{} }

func (anonymousPending) Send(_ context.Context, p gateway.ChargeParams) (*gateway.Charge, error) {
	return &gateway.Charge{Amount: p.Amount, Currency: p.Currency, Reference: p.Reference, Status: gateway.StatusPending}, nil
}
