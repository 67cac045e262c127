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

// crashed is a prior attempt whose execution died after sending: no outcome, may have reached.
// crashed is an attempt whose execution died after sending at `at`, its lease ending then too.
func crashed(at time.Time) phases.CallRecord { return phases.CallRecord{StartedAt: at, Deadline: at} }

var (
	succeeded    = phases.CallOutcomeSucceeded
	declined     = phases.CallOutcomeDeclined
	failedBefore = phases.CallOutcomeFailedBefore
	pending      = phases.CallOutcomePending
	unknown      = phases.CallOutcomeUnknown
)

func TestExecuteLostResponseWithIdempotency(t *testing.T) {
	t.Parallel()
	s := newSim(true, false)
	gw := trace(overHTTP(t, s))
	s.LoseNext(1)
	p := params(gateway.DeriveKey("payment", "lost-idem"), 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, []string{"charge", "charge"}, gw.list(), "the same key, re-sent")
	require.Equal(t, 1, s.ChargesFor(p.Reference), "the re-sent key must not charge again")
	require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
	require.Equal(t, charge.ID, j.Calls()[0].ProviderID)
}

func TestExecuteLostResponseWithInquiryOnly(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := trace(overHTTP(t, s))
	s.LoseNext(1)
	p := params(gateway.DeriveKey("payment", "lost-inquiry"), 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, p.Reference, charge.Reference)
	require.Equal(t, []string{"inquire", "charge", "inquire"}, gw.list(), "inquiry resolves it without a second charge")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
}

func TestExecuteResumeInquiresFirst(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := trace(s.Gateway())
	p := params(gateway.DeriveKey("payment", "resumed"), 100)
	first, err := s.Gateway().Send(ctxFor(t), p) // the attempt before the crash
	require.NoError(t, err)
	var j gatewaytest.Journal
	j.Add(crashed(time.Now()))

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, first, charge)
	require.Equal(t, []string{"inquire"}, gw.list(), "no charge is sent when inquiry finds one")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{"", succeeded}, j.Outcomes(), "this attempt found it succeeded")
	require.Equal(t, first.ID, j.Calls()[1].ProviderID)
}

// Without a journal, a caller says that an earlier attempt may have reached the provider.
func TestExecuteMayHaveReachedOverride(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := trace(s.Gateway())
	p := params(gateway.DeriveKey("payment", "override"), 100)
	first, err := s.Gateway().Send(ctxFor(t), p)
	require.NoError(t, err)

	charge, err := gateway.Execute(ctxFor(t), nil, gw, p, &gateway.ExecuteOpts{MayHaveReached: true})
	require.NoError(t, err)
	require.Equal(t, first, charge)
	require.Equal(t, []string{"inquire"}, gw.list())
}

func TestExecuteInquiryPrefersSucceeded(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{DeclineOver: 50}})
	ref := gateway.DeriveKey("payment", "mixed")
	_, err := s.Gateway().Send(ctxFor(t), gateway.ChargeParams{Amount: 100, Currency: "USD", Reference: ref, IdempotencyKey: "k1"})
	require.NoError(t, err)
	_, err = s.SetFaults(func(st *sim.Settings) { st.DeclineOver = 0 })
	require.NoError(t, err)
	ok, err := s.Gateway().Send(ctxFor(t), gateway.ChargeParams{Amount: 100, Currency: "USD", Reference: ref, IdempotencyKey: "k2"})
	require.NoError(t, err)

	charge, err := gateway.Execute(ctxFor(t), nil, s.Gateway(), params(ref, 100), &gateway.ExecuteOpts{MayHaveReached: true})
	require.NoError(t, err)
	require.Equal(t, ok, charge)
	require.Equal(t, 2, s.ChargesFor(ref))
}

// A charge for the reference that is not the intent's is never taken for it, nor charged over.
func TestExecuteInquiryMismatchIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for name, other := range map[string]gateway.ChargeParams{
		"amount":   {Amount: 999, Currency: "USD"},
		"currency": {Amount: 100, Currency: "EUR"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSim(false, true)
			gw := trace(s.Gateway())
			ref := gateway.DeriveKey("payment", "mismatch-"+name)
			other.Reference = ref
			_, err := s.Gateway().Send(ctxFor(t), other)
			require.NoError(t, err)
			var j gatewaytest.Journal
			j.Add(crashed(time.Now()))

			charge, err := gateway.Execute(ctxFor(t), &j, gw, params(ref, 100), fast(5))
			require.Nil(t, charge)
			require.ErrorIs(t, err, gateway.ErrCannotResolve)
			require.ErrorContains(t, err, "does not match the intent")
			require.True(t, phases.IsOutcomeUnknown(err), "park, never compensate: %v", err)
			require.False(t, phases.IsRetryable(err))
			require.Equal(t, []string{"inquire"}, gw.list(), "never charged over")
			require.Equal(t, []phases.CallOutcome{"", failedBefore}, j.Outcomes(), "this attempt sent nothing")
		})
	}
}

func TestExecuteResumeWithInquiryNothingFoundCharges(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := trace(s.Gateway())
	p := params(gateway.DeriveKey("payment", "never-reached"), 100)
	var j gatewaytest.Journal
	j.Add(crashed(time.Now()))

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, []string{"inquire", "charge"}, gw.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

// A prior attempt recorded as certainly not done does not call for an inquiry (with a provider
// that de-duplicates by key: one without keys is always asked first).
func TestExecuteAfterFailedBeforeSendsAtOnce(t *testing.T) {
	t.Parallel()
	s := newSim(true, true)
	gw := trace(s.Gateway())
	var j gatewaytest.Journal
	j.Add(phases.CallRecord{StartedAt: time.Now(), Outcome: failedBefore})

	_, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:refused-before", 100), fast(5))
	require.NoError(t, err)
	require.Equal(t, []string{"charge"}, gw.list())
}

// A final outcome the journal already holds is the answer: nothing is sent or asked.
func TestExecuteKnownOutcomeIsNotSentAgain(t *testing.T) {
	t.Parallel()
	for _, outcome := range []phases.CallOutcome{succeeded, declined} {
		t.Run(string(outcome), func(t *testing.T) {
			t.Parallel()
			gw := trace(sim.New(nil).Gateway())
			var j gatewaytest.Journal
			j.Add(phases.CallRecord{StartedAt: time.Now(), Outcome: outcome, ProviderID: "ch_known"})

			charge, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:known", 100), fast(5))
			require.NoError(t, err)
			require.Equal(t, "ch_known", charge.ID)
			require.Equal(t, outcome, gateway.Charges.Classify(charge, nil))
			require.Empty(t, gw.list())
			require.Equal(t, outcome, j.Outcomes()[1])
		})
	}
}

func TestExecuteKeyExpired(t *testing.T) {
	t.Parallel()
	s := newSim(true, false)
	gw := trace(s.Gateway())
	gw.caps = &gateway.Capabilities{IdempotencyKeys: true, KeyRetention: 24 * time.Hour}
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	o := fast(5)
	o.Now = func() time.Time { return now }
	p := params(gateway.DeriveKey("payment", "old"), 100)
	var j gatewaytest.Journal
	j.Add(crashed(now.Add(-25 * time.Hour))) // the key was first sent then

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, o)
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "key retention window")
	require.True(t, phases.IsOutcomeUnknown(err), "money may have moved: park, never compensate")
	require.False(t, phases.IsRetryable(err))
	require.Equal(t, unknown, gateway.Classify(err))
	require.Empty(t, gw.list())
	require.Zero(t, s.TotalCharges())
	require.Equal(t, failedBefore, j.Outcomes()[1], "this attempt sent nothing")

	// Within the window the same key is re-sent.
	var fresh gatewaytest.Journal
	fresh.Add(crashed(now.Add(-23 * time.Hour)))
	charge, err = gateway.Execute(ctxFor(t), &fresh, gw, p, o)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, 1, s.ChargesFor(p.Reference))

	// Without a journal, KeyCreatedAt says when the key was first sent.
	o.MayHaveReached, o.KeyCreatedAt = true, now.Add(-25*time.Hour)
	_, err = gateway.Execute(ctxFor(t), nil, gw, p, o)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "key retention window")
}

func TestExecuteCannotResolve(t *testing.T) {
	t.Parallel()
	s := newSim(false, false)
	gw := trace(s.Gateway())
	var j gatewaytest.Journal
	j.Add(crashed(time.Now()))

	charge, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:blind", 100), fast(5))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.True(t, phases.IsOutcomeUnknown(err), "money may have moved: park, never compensate")
	require.False(t, phases.IsRetryable(err))
	require.Empty(t, gw.list())
	require.Equal(t, failedBefore, j.Outcomes()[1])
}

func TestExecuteUnknownWithoutFeaturesNeverGuesses(t *testing.T) {
	t.Parallel()
	s := newSim(false, false)
	gw := trace(s.Gateway())
	s.LoseNext(1)
	p := params("payment:guess", 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.True(t, phases.IsOutcomeUnknown(err))
	require.Equal(t, []string{"charge"}, gw.list(), "no second charge on a blind provider")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{unknown}, j.Outcomes())
}

func TestExecuteRetriesNotDone(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	gw := trace(overHTTP(t, s))
	s.FailNext(3)
	p := params("payment:503s", 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, []string{"charge", "charge", "charge", "charge"}, gw.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
}

func TestExecuteRetriesRunOut(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{FailBefore: 1}})
	gw := trace(s.Gateway())
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:down", 100), fast(2))
	require.Nil(t, charge)
	require.Equal(t, failedBefore, gateway.Classify(err), "%v", err)
	require.True(t, phases.IsRetryable(err))
	require.Len(t, gw.list(), 3)
	require.Zero(t, s.TotalCharges())
	require.Equal(t, []phases.CallOutcome{failedBefore}, j.Outcomes())
}

// After the lost answer the provider goes down: the last error is a 503, but the first send may
// have charged, so the attempt is unknown.
func TestExecuteUnresolvedUnknownStaysUnknown(t *testing.T) {
	t.Parallel()
	s := newSim(true, false)
	s.LoseNext(1)
	gw := &failAfterFirst{traced: trace(s.Gateway()), s: s}
	p := params("payment:lost-then-down", 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(2))
	require.Nil(t, charge)
	require.Equal(t, unknown, gateway.Classify(err), "%v", err)
	require.True(t, phases.IsRetryable(err), "resolved by a later attempt")
	require.Equal(t, []string{"charge", "charge", "charge"}, gw.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{unknown}, j.Outcomes())
}

// failAfterFirst makes the simulator refuse every charge after the first.
type failAfterFirst struct {
	*traced
	s *sim.Simulator
}

func (g *failAfterFirst) Send(ctx context.Context, p gateway.ChargeParams) (*gateway.Charge, error) {
	charge, err := g.traced.Send(ctx, p)
	g.s.FailNext(100)
	return charge, err
}

func TestExecuteDeclineIsAResult(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{DeclineOver: 1000}})
	gw := trace(s.Gateway())
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:big", 5000), fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusDeclined, charge.Status)
	require.Equal(t, []string{"charge"}, gw.list(), "a decline is not retried")
	require.Equal(t, []phases.CallOutcome{declined}, j.Outcomes())
}

func TestExecuteInvalidIsPermanent(t *testing.T) {
	t.Parallel()
	gw := trace(overHTTP(t, sim.New(nil)))
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, params("payment:zero", 0), fast(5))
	require.Nil(t, charge)
	require.Equal(t, failedBefore, gateway.Classify(err))
	require.False(t, phases.IsRetryable(err), "compensate and park: %v", err)
	require.False(t, phases.IsOutcomeUnknown(err))
	require.Equal(t, []string{"charge"}, gw.list())
	require.Equal(t, []phases.CallOutcome{failedBefore}, j.Outcomes())
}

func TestExecuteRespectsDeadline(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{Latency: time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	p := params("payment:deadline", 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctx, &j, s.Gateway(), p, nil)
	require.Nil(t, charge)
	require.Less(t, time.Since(start), 10*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, unknown, gateway.Classify(err), "%v", err)
	require.True(t, phases.IsRetryable(err))
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{unknown}, j.Outcomes())
}

func TestExecuteCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctx, &j, s.Gateway(), params("payment:cancelled", 100), nil)
	require.Nil(t, charge)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, failedBefore, gateway.Classify(err), "nothing was sent: %v", err)
	require.Zero(t, s.TotalCharges())
	require.Equal(t, []phases.CallOutcome{failedBefore}, j.Outcomes())
}

func TestExecuteRetryDelays(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{FailBefore: 1}})
	var delays []int
	o := &gateway.ExecuteOpts{Retries: 3, RetryDelay: func(n int) time.Duration { delays = append(delays, n); return 0 }}
	_, err := gateway.Execute(ctxFor(t), nil, s.Gateway(), params("payment:delays", 100), o)
	require.Error(t, err)
	require.Equal(t, []int{1, 2, 3}, delays)

	delays = nil
	o.Retries = -1
	_, err = gateway.Execute(ctxFor(t), nil, s.Gateway(), params("payment:delays", 100), o)
	require.Error(t, err)
	require.Empty(t, delays, "a negative Retries means none")
}

// A failover that lost the key's commits lost its journal too: the re-execution's first
// attempt has no prior call, while the provider holds the first execution's charge under the
// same reference. With keys the same key answers it; without keys the inquiry before the first
// send finds it. Neither charges again.
func TestExecuteFirstAttemptFindsACharge(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*sim.Simulator{"keys only": newSim(true, false), "inquiry only": newSim(false, true)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := params("ref_lost-journal", 100)
			first, err := s.Gateway().Send(ctxFor(t), p)
			require.NoError(t, err)
			gw := trace(s.Gateway())
			var j gatewaytest.Journal

			charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
			require.NoError(t, err)
			require.Equal(t, first.ID, charge.ID)
			require.Equal(t, 1, s.ChargesFor(p.Reference), "one charge: %v", gw.list())
			require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
		})
	}
}
