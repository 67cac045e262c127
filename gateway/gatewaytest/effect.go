package gatewaytest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
)

// EffectOpts describe an effect's requests and what the backend behind its adapter can do, so
// the suite checks what it can faithfully check and skips the rest with a reason.
type EffectOpts[P, R any] struct {
	// NewParams returns a valid request whose reference, and idempotency key when the effect
	// has keys, is reference. Required.
	NewParams func(reference string) P
	// Invalid, when set, returns a request for reference that the provider refuses without
	// acting (a charge of zero). Defaults to nil: the permanent-error test is skipped.
	Invalid func(reference string) P
	// Stateless says the backend answers every request afresh (stripe-mock): it accepts keys
	// without de-duplicating and reads back canned records, so the same-key and read-back
	// tests are skipped. Defaults to false.
	Stateless bool
	// NoReadBack says the provider cannot read an effect back by id: Get must return an error
	// wrapping gateway.ErrUnsupported. Defaults to false: Get reads back what Send made.
	NoReadBack bool
	// Count, when set, counts the effects the backend holds for a reference, so the suite can
	// check that nothing was made twice. Defaults to nil.
	Count func(reference string) int
	// Declining, when set, returns an effect on the same kind of backend and a request for
	// reference that it declines. Defaults to nil: the decline test is skipped.
	Declining func(t *testing.T, reference string) (gateway.Effect[P, R], P)
	// Slow, when set, returns an effect whose sends take much longer than a second, to check
	// that a context deadline cuts a call short. Defaults to nil: only an already cancelled
	// context is checked.
	Slow func(t *testing.T) gateway.Effect[P, R]
	// Pending, when set, returns an effect on a backend whose next send is made pending and
	// turns final (succeeded) within a few seconds, and Count for it. Defaults to nil: the
	// pending tests are skipped.
	Pending func(t *testing.T) (e gateway.Effect[P, R], count func(reference string) int)
	// Lossy, when set, returns an effect on a backend that acts and then loses the answer of
	// its next send, and Count for it. Defaults to nil: the lost-response test is skipped.
	Lossy func(t *testing.T) (e gateway.Effect[P, R], count func(reference string) int)
	// Hanging, when set, returns an effect on a backend that acts on its next send and then
	// never answers it, declaring a per-request timeout under a second, and Count for it.
	// Defaults to nil: the request-timeout test is skipped.
	Hanging func(t *testing.T) (e gateway.Effect[P, R], count func(reference string) int)
	// InFlight, when set, returns an effect on a backend that holds every send for about hold
	// before acting on it (Capabilities().MaxInFlight covers it), and Count for it. Defaults to
	// nil: the in-flight window test is skipped.
	InFlight func(t *testing.T, hold time.Duration) (e gateway.Effect[P, R], count func(reference string) int)
}

// RunEffect checks the adapter newEffect builds against the behaviour Execute relies on.
// Each subtest gets its own effect and runs in parallel. Run is this suite for payment
// gateways.
//
// What it cannot check: that the provider lands every request within its declared
// MaxInFlight, and that an inquiry lists everything the provider holds at once. An empty
// inquiry is conclusive only when both hold.
func RunEffect[P, R any](t *testing.T, newEffect func(t *testing.T) gateway.Effect[P, R], opts *EffectOpts[P, R]) {
	var o EffectOpts[P, R]
	if opts != nil {
		o = *opts
	}
	require.NotNil(t, o.NewParams, "EffectOpts.NewParams is required")
	newRef := func() string { return gateway.DeriveKey("conformance", uuid.NewString()) }
	verdict := func(e gateway.Effect[P, R], r *R) (string, gateway.Status) {
		require.NotNil(t, r)
		return e.Kind().Verdict(r)
	}

	t.Run("DeclaresRequestTimeout", func(t *testing.T) {
		t.Parallel()
		caps := newEffect(t).Capabilities()
		require.Positive(t, caps.RequestTimeout, "every adapter states how long one request may take")
	})

	t.Run("SendSucceeds", func(t *testing.T) {
		t.Parallel()
		e := newEffect(t)
		p := o.NewParams(newRef())
		r, err := e.Send(ctxFor(t), p)
		require.NoError(t, err)
		id, status := verdict(e, r)
		require.NotEmpty(t, id)
		require.Equal(t, gateway.StatusSucceeded, status)
		require.NoError(t, e.Kind().Match(p, r), "the record is the effect asked for")
		require.Equal(t, phases.CallOutcomeSucceeded, e.Kind().Classify(r, err))
	})

	t.Run("SameKeySendsOnce", func(t *testing.T) {
		t.Parallel()
		e := newEffect(t)
		if !e.Capabilities().IdempotencyKeys {
			t.Skip("provider does not support idempotency keys")
		}
		if o.Stateless {
			t.Skip("backend accepts keys but does not de-duplicate")
		}
		p := o.NewParams(newRef())
		first, err := e.Send(ctxFor(t), p)
		require.NoError(t, err)
		second, err := e.Send(ctxFor(t), p)
		require.NoError(t, err)
		require.Equal(t, first, second, "a repeated key must answer the first request")
		if o.Count != nil {
			ref, _ := e.Kind().Keys(p)
			require.Equal(t, 1, o.Count(ref))
		}
	})

	t.Run("Inquiry", func(t *testing.T) {
		t.Parallel()
		e := newEffect(t)
		ctx := ctxFor(t)
		if !e.Capabilities().Inquiry {
			_, err := e.Inquire(ctx, newRef())
			require.ErrorIs(t, err, gateway.ErrUnsupported)
			return
		}
		none, err := e.Inquire(ctx, newRef())
		require.NoError(t, err)
		require.Empty(t, none)

		p := o.NewParams(newRef())
		r, err := e.Send(ctx, p)
		require.NoError(t, err)
		ref, _ := e.Kind().Keys(p)
		found, err := e.Inquire(ctx, ref)
		require.NoError(t, err)
		require.Len(t, found, 1)
		require.Equal(t, *r, found[0])
	})

	t.Run("GetReadsBack", func(t *testing.T) {
		t.Parallel()
		if o.Stateless {
			t.Skip("backend reads back canned records")
		}
		e := newEffect(t)
		ctx := ctxFor(t)
		r, err := e.Send(ctx, o.NewParams(newRef()))
		require.NoError(t, err)
		id, _ := verdict(e, r)
		if o.NoReadBack {
			_, err := e.Get(ctx, id)
			require.ErrorIs(t, err, gateway.ErrUnsupported)
			return
		}
		got, err := e.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, r, got)

		_, err = e.Get(ctx, "missing_"+uuid.NewString()[:8])
		require.ErrorIs(t, err, gateway.ErrNotFound)
	})

	t.Run("DeclineIsAResult", func(t *testing.T) {
		t.Parallel()
		if o.Declining == nil {
			t.Skip("backend cannot be told to decline")
		}
		e, p := o.Declining(t, newRef())
		r, err := e.Send(ctxFor(t), p)
		require.NoError(t, err, "a decline is a result, not an error")
		_, status := verdict(e, r)
		require.Equal(t, gateway.StatusDeclined, status)
		require.NoError(t, e.Kind().Match(p, r))
		require.Equal(t, phases.CallOutcomeDeclined, e.Kind().Classify(r, err))
	})

	t.Run("InvalidIsPermanent", func(t *testing.T) {
		t.Parallel()
		if o.Invalid == nil {
			t.Skip("backend does not validate requests")
		}
		e := newEffect(t)
		r, err := e.Send(ctxFor(t), o.Invalid(newRef()))
		require.Error(t, err)
		require.Nil(t, r)
		require.Equal(t, phases.CallOutcomeFailedBefore, e.Kind().Classify(r, err), "refused: nothing made")
		require.False(t, phases.IsRetryable(err), "sending it again cannot help: %v", err)
	})

	t.Run("CancelledContextSendsNothing", func(t *testing.T) {
		t.Parallel()
		e := newEffect(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		p := o.NewParams(newRef())
		r, err := e.Send(ctx, p)
		require.Error(t, err)
		require.Nil(t, r)
		require.True(t, errors.Is(err, context.Canceled), "error should say the context was cancelled: %v", err)
		require.Equal(t, phases.CallOutcomeFailedBefore, e.Kind().Classify(r, err), "nothing was sent: %v", err)
		if o.Count != nil {
			ref, _ := e.Kind().Keys(p)
			require.Zero(t, o.Count(ref))
		}
	})

	t.Run("DeadlineCutsCallShort", func(t *testing.T) {
		t.Parallel()
		if o.Slow == nil {
			t.Skip("backend cannot be made slow")
		}
		e := o.Slow(t)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		r, err := e.Send(ctx, o.NewParams(newRef()))
		require.Error(t, err)
		require.Nil(t, r)
		require.Less(t, time.Since(start), 5*time.Second, "the call must end soon after its deadline")
		require.Equal(t, phases.CallOutcomeUnknown, e.Kind().Classify(r, err),
			"a call cut short after sending may have acted")
	})

	t.Run("PendingIsNeverSentTwice", func(t *testing.T) {
		t.Parallel()
		if o.Pending == nil {
			t.Skip("backend cannot be told to leave an effect pending")
		}
		backend, count := o.Pending(t)
		e := &counted[P, R]{Effect: backend}
		p := o.NewParams(newRef())
		ref, _ := e.Kind().Keys(p)

		// An attempt answered pending records it and leaves it for later.
		var j Journal
		r, err := gateway.Execute(ctxFor(t), &j, e, p, &gateway.ExecuteOpts{Retries: -1})
		require.Nil(t, r)
		require.ErrorIs(t, err, gateway.ErrPending)
		require.True(t, phases.IsRetryable(err), "pending is transient: %v", err)
		calls := j.Calls()
		require.Len(t, calls, 1)
		require.Equal(t, phases.CallOutcomePending, calls[0].Outcome)
		require.NotEmpty(t, calls[0].ProviderID)

		// The next attempts read it back until it is final, and never send it again.
		r, err = gateway.Execute(ctxFor(t), &j, e, p, polling)
		require.NoError(t, err)
		id, status := verdict(e, r)
		require.Equal(t, gateway.StatusSucceeded, status)
		require.Equal(t, calls[0].ProviderID, id)
		require.Equal(t, int32(1), e.sends.Load(), "a pending effect is an effect: never sent again")
		require.Equal(t, 1, count(ref))
		require.Equal(t, []phases.CallOutcome{phases.CallOutcomePending, phases.CallOutcomeSucceeded}, j.Outcomes())

		got, err := backend.Get(ctxFor(t), id)
		require.NoError(t, err)
		_, status = verdict(e, got)
		require.Equal(t, gateway.StatusSucceeded, status, "Get shows it turned final")
	})

	t.Run("LostResponseIsResolved", func(t *testing.T) {
		t.Parallel()
		if o.Lossy == nil {
			t.Skip("backend cannot be told to lose an answer")
		}
		e, count := o.Lossy(t)
		resolvesLostAnswer(t, e, count, o.NewParams(newRef()))
	})

	t.Run("LostAnswerIsCutAtTheRequestTimeout", func(t *testing.T) {
		t.Parallel()
		if o.Hanging == nil {
			t.Skip("backend cannot be told to withhold an answer")
		}
		e, count := o.Hanging(t)
		timeout := e.Capabilities().RequestTimeout
		require.Positive(t, timeout)
		require.Less(t, timeout, time.Second, "Hanging declares a per-request timeout under a second")
		start := time.Now()
		resolvesLostAnswer(t, e, count, o.NewParams(newRef()))
		require.Less(t, time.Since(start), 10*time.Second,
			"the unanswered send is given up at the request timeout, not at the call's 30s deadline")
	})

	t.Run("EmptyInquiryInsideInFlightWindowIsNotTrusted", func(t *testing.T) {
		t.Parallel()
		if o.InFlight == nil {
			t.Skip("backend cannot hold a request in flight")
		}
		const hold = time.Second
		e, count := o.InFlight(t, hold)
		caps := e.Capabilities()
		require.GreaterOrEqual(t, caps.MaxInFlight, hold, "the provider declares how long a request may take to land")
		p := o.NewParams(newRef())
		ref, _ := e.Kind().Keys(p)

		// A first execution sends and gives up while its request is on its way (a zombie).
		ctx, cancel := context.WithTimeout(context.Background(), hold/4)
		r, err := e.Send(ctx, p)
		cancel()
		require.Equal(t, phases.CallOutcomeUnknown, e.Kind().Classify(r, err), "%v", err)
		var j Journal
		now := time.Now() // the zombie's lease ends: it sends nothing more
		j.Add(phases.CallRecord{StartedAt: now, Deadline: now})

		switch {
		case !caps.Inquiry && caps.IdempotencyKeys:
			// The same key, re-sent, lands after the zombie's and is answered with its effect.
			r, err := gateway.Execute(ctxFor(t), &j, e, p, fast)
			require.NoError(t, err)
			_, status := verdict(e, r)
			require.Equal(t, gateway.StatusSucceeded, status)
			require.Equal(t, 1, count(ref))
			return
		case !caps.Inquiry:
			_, err := gateway.Execute(ctxFor(t), &j, e, p, fast)
			require.ErrorIs(t, err, gateway.ErrCannotResolve, "nothing can tell: never guess")
			require.Eventually(t, func() bool { return count(ref) == 1 }, 10*time.Second, 10*time.Millisecond)
			return
		}

		// The next one finds nothing yet; with no time to wait it sends nothing and says when.
		short, cancel := context.WithTimeout(context.Background(), hold/2)
		defer cancel()
		r, err = gateway.Execute(short, &j, e, p, fast)
		require.Nil(t, r)
		require.ErrorIs(t, err, gateway.ErrInFlight)
		after, ok := phases.RetryDelay(err)
		require.True(t, ok, "the in-flight refusal says when to try again")
		require.Positive(t, after)
		require.Equal(t, phases.CallOutcomeFailedBefore, j.Outcomes()[1], "this attempt sent nothing")
		require.Zero(t, count(ref), "the zombie's request has not landed yet")

		// With time to wait, it waits out the window, finds the zombie's effect, sends nothing.
		r, err = gateway.Execute(ctxFor(t), &j, e, p, fast)
		require.NoError(t, err)
		_, status := verdict(e, r)
		require.Equal(t, gateway.StatusSucceeded, status)
		require.Equal(t, 1, count(ref), "one effect: the zombie's")
	})
}

// resolvesLostAnswer checks that one Execute resolves a send that acted and got no
// answer: by inquiry or by the same key, one effect; with neither, it never guesses.
func resolvesLostAnswer[P, R any](t *testing.T, e gateway.Effect[P, R], count func(string) int, p P) {
	t.Helper()
	ref, _ := e.Kind().Keys(p)
	var j Journal
	r, err := gateway.Execute(ctxFor(t), &j, e, p, fast)
	caps := e.Capabilities()
	if !caps.Inquiry && !caps.IdempotencyKeys {
		require.ErrorIs(t, err, gateway.ErrCannotResolve, "nothing can tell: never guess")
		require.True(t, phases.IsOutcomeUnknown(err))
		require.Equal(t, []phases.CallOutcome{phases.CallOutcomeUnknown}, j.Outcomes())
		require.Equal(t, 1, count(ref))
		return
	}
	require.NoError(t, err)
	require.NotNil(t, r)
	_, status := e.Kind().Verdict(r)
	require.Equal(t, gateway.StatusSucceeded, status)
	require.Equal(t, 1, count(ref), "resolved by inquiry or the same key: one effect")
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeSucceeded}, j.Outcomes())
}

// fast retries at once; polling reads a pending effect every 50ms for up to 10s.
var (
	fast    = &gateway.ExecuteOpts{RetryDelay: func(int) time.Duration { return time.Millisecond }}
	polling = &gateway.ExecuteOpts{Retries: 200, RetryDelay: func(int) time.Duration { return 50 * time.Millisecond }}
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// counted counts the sends made through an effect.
type counted[P, R any] struct {
	gateway.Effect[P, R]
	sends atomic.Int32
}

func (c *counted[P, R]) Send(ctx context.Context, p P) (*R, error) {
	c.sends.Add(1)
	return c.Effect.Send(ctx, p)
}
