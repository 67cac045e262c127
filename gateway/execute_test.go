package gateway_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// attempts records the outcome of every charge attempt Execute reports.
type attempts struct {
	mu       sync.Mutex
	outcomes []gateway.Outcome
	then     func(n int) // called after attempt n (1-based), to script faults
}

func (a *attempts) record(o gateway.Outcome, _ time.Duration) {
	a.mu.Lock()
	a.outcomes = append(a.outcomes, o)
	n := len(a.outcomes)
	a.mu.Unlock()
	if a.then != nil {
		a.then(n)
	}
}

func (a *attempts) list() []gateway.Outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]gateway.Outcome(nil), a.outcomes...)
}

// opts returns Execute options with immediate retries (at most retries of them).
func opts(a *attempts, retries uint64) *gateway.ExecuteOpts {
	return &gateway.ExecuteOpts{
		Backoff:   func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, retries) },
		OnAttempt: a.record,
	}
}

func params(ref string, amount int64) gateway.ChargeParams {
	return gateway.ChargeParams{Amount: amount, Currency: "USD", Reference: ref, IdempotencyKey: ref}
}

// withCaps overrides what a gateway declares, e.g. to give it a key retention window.
type withCaps struct {
	gateway.Gateway
	caps gateway.Capabilities
}

func (g withCaps) Capabilities() gateway.Capabilities { return g.caps }

func newSim(idempotency, inquiry bool) *sim.Simulator {
	return sim.New(&sim.Config{Idempotency: &idempotency, Inquiry: &inquiry})
}

// overHTTP returns a client adapter on s served over a loopback listener.
func overHTTP(t *testing.T, s *sim.Simulator) gateway.Gateway {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := sim.NewClient(srv.URL, nil)
	require.NoError(t, err)
	return c
}

func TestExecuteLostResponseWithIdempotency(t *testing.T) {
	t.Parallel()
	s := newSim(true, false)
	gw := overHTTP(t, s)
	s.LoseNext(1)
	a := &attempts{}
	p := params(gateway.DeriveKey("payment", "lost-idem"), 100)

	charge, err := gateway.Execute(context.Background(), gw, p, opts(a, 5))
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.Equal(t, []gateway.Outcome{gateway.OutcomeAmbiguous, gateway.OutcomeSucceeded}, a.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference), "the re-sent key must not charge again")
}

func TestExecuteLostResponseWithInquiryOnly(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := overHTTP(t, s)
	s.LoseNext(1)
	a := &attempts{}
	p := params(gateway.DeriveKey("payment", "lost-inquiry"), 100)

	charge, err := gateway.Execute(context.Background(), gw, p, opts(a, 5))
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.Equal(t, p.Reference, charge.Reference)
	require.Equal(t, []gateway.Outcome{gateway.OutcomeAmbiguous}, a.list(), "inquiry resolves it without a second charge")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteResumeInquiresFirst(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	gw := s.Gateway()
	p := params(gateway.DeriveKey("payment", "resumed"), 100)
	first, err := gw.Charge(context.Background(), p) // the attempt before the crash
	require.NoError(t, err)

	a := &attempts{}
	o := opts(a, 5)
	o.MayHaveReached = true
	charge, err := gateway.Execute(context.Background(), gw, p, o)
	require.NoError(t, err)
	require.Equal(t, first, charge)
	require.Empty(t, a.list(), "no charge is sent when inquiry finds one")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteResumePrefersSucceeded(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{DeclineOver: 150})
	gw := s.Gateway()
	ref := gateway.DeriveKey("payment", "mixed")
	_, err := gw.Charge(context.Background(), gateway.ChargeParams{Amount: 200, Currency: "USD", Reference: ref, IdempotencyKey: "k1"})
	require.NoError(t, err)
	ok, err := gw.Charge(context.Background(), gateway.ChargeParams{Amount: 100, Currency: "USD", Reference: ref, IdempotencyKey: "k2"})
	require.NoError(t, err)

	charge, err := gateway.Execute(context.Background(), gw, params(ref, 100), &gateway.ExecuteOpts{MayHaveReached: true})
	require.NoError(t, err)
	require.Equal(t, ok, charge)
	require.Equal(t, 2, s.ChargesFor(ref))
}

func TestExecuteResumeWithInquiryNothingFoundCharges(t *testing.T) {
	t.Parallel()
	s := newSim(false, true)
	a := &attempts{}
	o := opts(a, 5)
	o.MayHaveReached = true
	p := params(gateway.DeriveKey("payment", "never-reached"), 100)
	charge, err := gateway.Execute(context.Background(), s.Gateway(), p, o)
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.Equal(t, []gateway.Outcome{gateway.OutcomeSucceeded}, a.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteKeyExpired(t *testing.T) {
	t.Parallel()
	s := newSim(true, false)
	gw := withCaps{s.Gateway(), gateway.Capabilities{IdempotencyKeys: true, KeyRetention: 24 * time.Hour}}
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	a := &attempts{}
	o := opts(a, 5)
	o.MayHaveReached = true
	o.Now = func() time.Time { return now }
	o.KeyCreatedAt = now.Add(-25 * time.Hour)
	p := params(gateway.DeriveKey("payment", "old"), 100)

	charge, err := gateway.Execute(context.Background(), gw, p, o)
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrKeyExpired)
	require.Equal(t, gateway.OutcomePermanent, gateway.Classify(nil, err))
	var r interface{ Retryable() bool }
	require.ErrorAs(t, err, &r)
	require.False(t, r.Retryable())
	require.Empty(t, a.list())
	require.Zero(t, s.TotalCharges())

	// Within the window the same key is re-sent.
	o.KeyCreatedAt = now.Add(-23 * time.Hour)
	charge, err = gateway.Execute(context.Background(), gw, p, o)
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteCannotResolve(t *testing.T) {
	t.Parallel()
	s := newSim(false, false)
	a := &attempts{}
	o := opts(a, 5)
	o.MayHaveReached = true
	charge, err := gateway.Execute(context.Background(), s.Gateway(), params("payment:blind", 100), o)
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.Equal(t, gateway.OutcomePermanent, gateway.Classify(nil, err))
	require.Empty(t, a.list())
	require.Zero(t, s.TotalCharges())
}

func TestExecuteAmbiguousWithoutFeaturesNeverGuesses(t *testing.T) {
	t.Parallel()
	s := newSim(false, false)
	s.LoseNext(1)
	a := &attempts{}
	p := params("payment:guess", 100)
	charge, err := gateway.Execute(context.Background(), s.Gateway(), p, opts(a, 5))
	require.Nil(t, charge)
	var ambiguous *gateway.AmbiguousError
	require.ErrorAs(t, err, &ambiguous)
	require.Equal(t, []gateway.Outcome{gateway.OutcomeAmbiguous}, a.list(), "no second charge on a blind provider")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteRetriesUnavailable(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	gw := overHTTP(t, s)
	s.FailNext(3)
	a := &attempts{}
	p := params("payment:503s", 100)
	charge, err := gateway.Execute(context.Background(), gw, p, opts(a, 5))
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
	require.Equal(t, []gateway.Outcome{
		gateway.OutcomeRetryable, gateway.OutcomeRetryable, gateway.OutcomeRetryable, gateway.OutcomeSucceeded,
	}, a.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteRetriesRunOut(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{FailBefore: 1})
	a := &attempts{}
	charge, err := gateway.Execute(context.Background(), s.Gateway(), params("payment:down", 100), opts(a, 2))
	require.Nil(t, charge)
	require.Equal(t, gateway.OutcomeRetryable, gateway.Classify(nil, err), "%v", err)
	require.Len(t, a.list(), 3)
	require.Zero(t, s.TotalCharges())
}

func TestExecuteUnresolvedAmbiguityStaysAmbiguous(t *testing.T) {
	t.Parallel()
	s := newSim(true, false)
	s.LoseNext(1)
	// After the lost answer the provider goes down: the last error is a 503, but the first
	// attempt may have charged, so the caller must resume with MayHaveReached.
	a := &attempts{then: func(n int) {
		if n == 1 {
			s.FailNext(100)
		}
	}}
	p := params("payment:lost-then-down", 100)
	charge, err := gateway.Execute(context.Background(), s.Gateway(), p, opts(a, 2))
	require.Nil(t, charge)
	require.Equal(t, gateway.OutcomeAmbiguous, gateway.Classify(nil, err), "%v", err)
	require.Equal(t, []gateway.Outcome{gateway.OutcomeAmbiguous, gateway.OutcomeRetryable, gateway.OutcomeRetryable}, a.list())
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteDeclineIsAResult(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{DeclineOver: 1000})
	a := &attempts{}
	charge, err := gateway.Execute(context.Background(), s.Gateway(), params("payment:big", 5000), opts(a, 5))
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusDeclined, charge.Status)
	require.Equal(t, []gateway.Outcome{gateway.OutcomeDeclined}, a.list(), "a decline is not retried")
}

func TestExecuteInvalidIsPermanent(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	a := &attempts{}
	charge, err := gateway.Execute(context.Background(), overHTTP(t, s), params("payment:zero", 0), opts(a, 5))
	require.Nil(t, charge)
	require.Equal(t, gateway.OutcomePermanent, gateway.Classify(nil, err))
	require.Equal(t, []gateway.Outcome{gateway.OutcomePermanent}, a.list())
}

func TestExecuteRespectsDeadline(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Latency: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	p := params("payment:deadline", 100)
	charge, err := gateway.Execute(ctx, s.Gateway(), p, nil)
	require.Nil(t, charge)
	require.Less(t, time.Since(start), 10*time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, gateway.OutcomeAmbiguous, gateway.Classify(nil, err), "%v", err)
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestExecuteCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	charge, err := gateway.Execute(ctx, s.Gateway(), params("payment:cancelled", 100), nil)
	require.Nil(t, charge)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, gateway.OutcomeRetryable, gateway.Classify(nil, err), "nothing was sent: %v", err)
	require.Zero(t, s.TotalCharges())
}
