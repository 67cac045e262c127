package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/internal/sleep"
	"github.com/pgsaga/pgsaga/phases"
)

// Execute makes one effect exactly once through e, retrying in-process while that is safe, and
// records in j (when not nil) what this attempt came to, exactly once on every return path. It
// is the one implementation of the engine's rules for an external call, for a payment Gateway
// as for any Effect.
//
// It returns the provider's final record, succeeded or declined (a decline is a result, not an
// error), or an error the engine acts on by behaviour:
//
//   - An effect the journal knows by id (recorded pending) is never sent again: it is read back
//     (Get, else inquiry) until it is final. Still pending when the rounds or ctx run out: an
//     ErrPending in phases.RetryAfter; pending past opts.PendingWindow: ErrCannotResolve.
//   - When an earlier attempt may have reached the provider (a prior call not recorded as
//     certainly not done, or opts.MayHaveReached) and the provider has inquiry, it asks by
//     reference first. So it does before the first send to a provider with inquiry that cannot
//     de-duplicate the request by its idempotency key: a re-execution after a failover that
//     lost the key's commits (and its journal) finds the effect the first execution made. A
//     record found is taken only if it matches the intent (Kind.Match; ErrCannotResolve otherwise),
//     a pending one is followed as above. An empty answer counts only once every earlier
//     attempt (and every send of this one) that may have reached the provider has been quiet
//     for the longer of the in-flight window it was sent under and Capabilities.MaxInFlight
//     now: before that it waits when the wait fits in ctx (at most half of the time left), else
//     returns ErrInFlight in phases.RetryAfter.
//   - Before every send it journals the in-flight window in force (j.DeclareInFlight); when
//     that fails it sends nothing.
//   - Without inquiry it re-sends the same key only if the provider honours keys
//     (ErrCannotResolve otherwise) and the key is within Capabilities.KeyRetention
//     (ErrCannotResolve otherwise). Both satisfy phases.IsOutcomeUnknown: park, never compensate.
//   - Every request to the provider is cut at Capabilities.RequestTimeout: a send without an
//     answer by then is unknown, and is resolved in the next round like a lost answer.
//   - A send that certainly did not act is retried; one whose outcome is unknown is resolved
//     the same way (inquiry, measured from when that send stopped, or the same key), never by
//     guessing. An effect answered pending is never sent again.
//   - When the rounds or ctx run out, it returns the last failure, Unknown when this
//     attempt may have acted.
//
// What it records: succeeded, declined or pending (with the provider's id) when it saw the
// effect; unknown when a send of this attempt may have acted unresolved; failed_before when this
// attempt certainly did nothing (its sends failed before acting, or it sent nothing: it only
// waited, or learnt nothing new).
func Execute[P, R any](ctx context.Context, j Journal, e Effect[P, R], params P, opts *ExecuteOpts) (*R, error) {
	kind := e.Kind()
	if err := kind.validate(); err != nil {
		if j != nil {
			j.RecordCall(phases.CallOutcomeFailedBefore, "")
		}
		return nil, phases.Permanent(err)
	}
	x := newExecution(j, e, kind, params, opts.withDefaults())
	r, err := x.run(ctx)
	if j != nil {
		j.RecordCall(x.outcome, x.providerID)
	}
	return r, err
}

// execution is the state of one Execute call across its rounds.
type execution[P, R any] struct {
	e      Effect[P, R]
	kind   *Kind[P, R]
	caps   Capabilities
	params P
	// ref and key are the params' reference and idempotency key (Kind.Keys).
	ref, key string
	opts     ExecuteOpts

	// j is the call's journal; nil when Execute was given none.
	j Journal
	// attempts are the earlier attempts and this attempt's own sends whose outcome is unknown,
	// each with the window it sent under: what an empty inquiry must outwait
	// (emptyInquiryConclusiveAt).
	attempts []phases.CallRecord
	// unresolved is true while some attempt may have acted and nothing has told.
	unresolved bool
	// pendingID is the provider's id of an effect known to be pending, read back, never re-sent.
	pendingID string
	// pendingSince is when the effect was first seen pending.
	pendingSince time.Time
	// known is a final record the journal already holds.
	known *R

	// outcome and providerID are what this attempt came to so far (see Execute).
	outcome    phases.CallOutcome
	providerID string
	// lastErr is the last failure of a round that may be retried.
	lastErr error
}

func newExecution[P, R any](j Journal, e Effect[P, R], kind *Kind[P, R], params P, o ExecuteOpts) *execution[P, R] {
	x := &execution[P, R]{j: j, e: e, kind: kind, caps: e.Capabilities(), params: params, opts: o, outcome: phases.CallOutcomeFailedBefore}
	x.ref, x.key = kind.Keys(params)
	// A provider that cannot tell a repeated request by its key is asked before the first send
	// too: a failover that lost acknowledged commits loses the journal with them, and an earlier
	// execution of the same intent may have acted under the same reference.
	x.unresolved = o.MayHaveReached || x.caps.Inquiry && !x.keyed()
	if j == nil {
		return x
	}
	prior := j.PriorCalls()
	x.attempts = prior
	for _, c := range prior {
		if x.opts.KeyCreatedAt.IsZero() || c.StartedAt.Before(x.opts.KeyCreatedAt) {
			x.opts.KeyCreatedAt = c.StartedAt
		}
		if !c.MayHaveReached() {
			continue
		}
		x.unresolved = true
		if c.Outcome == phases.CallOutcomePending && x.pendingSince.IsZero() {
			x.pendingSince = c.StartedAt
			if c.EndedAt != nil {
				x.pendingSince = *c.EndedAt
			}
		}
	}
	// The latest attempt that saw the effect itself decides: it is never sent again.
	for i := len(prior) - 1; i >= 0; i-- {
		c := prior[i]
		if c.ProviderID == "" {
			continue
		}
		switch c.Outcome {
		case phases.CallOutcomePending:
			x.pendingID = c.ProviderID
		case phases.CallOutcomeSucceeded:
			x.known = kind.Recorded(params, c.ProviderID, StatusSucceeded)
		case phases.CallOutcomeDeclined:
			x.known = kind.Recorded(params, c.ProviderID, StatusDeclined)
		default:
			continue
		}
		break
	}
	return x
}

// keyed reports whether the provider de-duplicates this request by its idempotency key.
func (x *execution[P, R]) keyed() bool { return x.caps.IdempotencyKeys && x.key != "" }

// verdict is the provider's id for r and its status.
func (x *execution[P, R]) verdict(r *R) (string, Status) { return x.kind.Verdict(r) }

// result is what one step of a round came to: a record (final or pending), or an error that the
// next round may retry (retry) or that ends the call.
type result[R any] struct {
	record *R
	err    error
	retry  bool
}

func done[R any](r *R) result[R]        { return result[R]{record: r} }
func failed[R any](err error) result[R] { return result[R]{err: err} }
func retryable[R any](err error) result[R] {
	return result[R]{err: err, retry: phases.IsRetryable(err)}
}
func retryLater[R any](err error) result[R] { return result[R]{err: err, retry: true} }

// run makes rounds until a final record, a failure that must not be retried here, or the end
// of the rounds or of ctx.
func (x *execution[P, R]) run(ctx context.Context) (*R, error) {
	if x.known != nil {
		// The journal holds the final answer: nothing to send or ask.
		x.saw(x.known)
		return x.known, nil
	}
	for round := 0; ; round++ {
		if round > 0 && !x.pause(ctx, round) {
			return nil, x.gaveUp(ctx)
		}
		var r result[R]
		switch {
		case x.pendingID != "":
			r = x.readBack(ctx)
		case x.unresolved:
			r = x.resolve(ctx)
		default:
			r = x.send(ctx)
		}
		if r.err != nil && !r.retry {
			return nil, r.err
		}
		if r.err != nil {
			x.lastErr = r.err
			continue
		}
		if _, status := x.verdict(r.record); status.Final() {
			return r.record, nil
		}
		// Pending: follow it.
		if err := x.followPending(r.record); err != nil {
			return nil, err
		}
	}
}

// saw notes a record this attempt saw (sent, found or read back).
func (x *execution[P, R]) saw(r *R) {
	id, status := x.verdict(r)
	x.outcome, x.providerID = status.outcome(), id
}

// followPending notes that r is pending: from now on it is read back, never re-sent, until it
// is final or pending longer than the window.
func (x *execution[P, R]) followPending(r *R) error {
	id, _ := x.verdict(r)
	if id == "" {
		// Nothing to read it back by, and sending again could be a second effect.
		return fmt.Errorf("%s for %q is pending without an id: %w", x.kind.Name, x.ref, ErrCannotResolve)
	}
	now := x.opts.Now()
	x.pendingID, x.unresolved = id, false
	if x.pendingSince.IsZero() {
		x.pendingSince = now
	}
	if since := now.Sub(x.pendingSince); since > x.opts.PendingWindow {
		return fmt.Errorf("%s %s for %q pending for %s (window %s): %w",
			x.kind.Name, id, x.ref, since.Round(time.Second), x.opts.PendingWindow, errPendingTooLong)
	}
	return nil
}

// request returns the context one request to the provider runs under: ctx, cut at the
// adapter's per-request timeout, so that a lost answer leaves the rest of the call's time to
// resolve it.
func (x *execution[P, R]) request(ctx context.Context) (context.Context, context.CancelFunc) {
	if x.caps.RequestTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, x.caps.RequestTimeout)
}

// send sends the request once, after journaling the in-flight window it is sent under.
func (x *execution[P, R]) send(ctx context.Context) result[R] {
	window := x.caps.MaxInFlight
	if x.j != nil {
		if err := x.j.DeclareInFlight(ctx, window); err != nil {
			// Unjournaled, a request that lands late could be taken for no effect: not sent.
			return failed[R](x.classed(fmt.Errorf("error journaling the in-flight window of %s %q, not sent: %w", x.kind.Name, x.ref, err)))
		}
	}
	rctx, cancel := x.request(ctx)
	r, err := x.e.Send(rctx, x.params)
	cancel()
	switch x.kind.Classify(r, err) {
	case phases.CallOutcomeSucceeded, phases.CallOutcomeDeclined, phases.CallOutcomePending:
		x.saw(r)
		return done(r)
	case phases.CallOutcomeFailedBefore:
		return retryable[R](fmt.Errorf("error sending %s %q: %w", x.kind.Name, x.ref, err))
	}
	// It may have acted, and may still land until it has been quiet for its window.
	x.outcome, x.unresolved = phases.CallOutcomeUnknown, true
	now := x.opts.Now()
	x.attempts = append(x.attempts, phases.CallRecord{StartedAt: now, EndedAt: &now, MaxInFlight: window})
	switch {
	case err == nil && r == nil:
		err = Unknown(errors.New("the provider answered neither a record nor an error"))
	case err == nil:
		id, status := x.verdict(r)
		err = Unknown(fmt.Errorf("%s %s has status %q", x.kind.Name, id, status))
	}
	err = fmt.Errorf("error sending %s %q: %w", x.kind.Name, x.ref, err)
	if phases.IsOutcomeUnknown(err) {
		return failed[R](err)
	}
	if !x.caps.Inquiry && !x.keyed() {
		// Neither inquiry nor keys: another send could be a second effect. Never guess.
		return failed[R](fmt.Errorf("%w (%w)", errNoResolution, err))
	}
	return retryLater[R](err)
}

// resolve settles what an earlier attempt did before anything is sent again: by inquiry when
// the provider has it (then sends when nothing can have landed), else by re-sending the key.
func (x *execution[P, R]) resolve(ctx context.Context) result[R] {
	if !x.caps.Inquiry {
		return x.resendKey(ctx)
	}
	r, held := x.inquire(ctx)
	if held || r.err != nil {
		return x.unlessUnsupported(ctx, r)
	}
	if wait := emptyInquiryConclusiveAt(x.attempts, x.caps.MaxInFlight).Sub(x.opts.Now()); wait > 0 {
		// Nothing found yet, and an earlier request may still land: ask again after the window.
		inFlight := fmt.Errorf("%s %q: %w (%s left)", x.kind.Name, x.ref, ErrInFlight, wait.Round(time.Millisecond))
		if !fits(ctx, wait) {
			return failed[R](phases.RetryAfter(wait, x.classed(inFlight)))
		}
		if !sleep.For(ctx, wait) {
			return failed[R](x.classed(fmt.Errorf("%w (gave up: %w)", inFlight, ctx.Err())))
		}
		if r, held = x.inquire(ctx); held || r.err != nil {
			return x.unlessUnsupported(ctx, r)
		}
	}
	// Authoritative, and nothing can still land: no attempt acted.
	x.unresolved, x.outcome = false, phases.CallOutcomeFailedBefore
	return x.send(ctx)
}

// unlessUnsupported returns r, or when the provider stopped answering inquiries, resolves by
// key instead.
func (x *execution[P, R]) unlessUnsupported(ctx context.Context, r result[R]) result[R] {
	if !errors.Is(r.err, ErrUnsupported) {
		return r
	}
	x.caps = x.e.Capabilities()
	x.caps.Inquiry = false
	return x.resendKey(ctx)
}

// classed wraps err, a failure of this attempt to resolve an earlier one, so that it tells
// what this attempt came to: unknown when one of its own sends may have acted, else not done.
func (x *execution[P, R]) classed(err error) error {
	if x.outcome == phases.CallOutcomeUnknown {
		return Unknown(err)
	}
	return NotDone(err)
}

// inquire asks the provider what it holds for the reference: held is false when it holds
// nothing (and r is empty). An error wrapping ErrUnsupported is returned as is.
func (x *execution[P, R]) inquire(ctx context.Context) (r result[R], held bool) {
	rctx, cancel := x.request(ctx)
	found, err := x.e.Inquire(rctx, x.ref)
	cancel()
	switch {
	case errors.Is(err, ErrUnsupported):
		return failed[R](err), false
	case err != nil:
		err = fmt.Errorf("error inquiring about %s %q: %w", x.kind.Name, x.ref, err)
		if !phases.IsRetryable(err) {
			// Nothing else can tell what the earlier attempt did.
			return failed[R](phases.OutcomeUnknown(err)), false
		}
		return retryLater[R](x.classed(err)), false
	}
	record, err := x.pick(found)
	switch {
	case err != nil:
		return failed[R](err), false
	case record == nil:
		return result[R]{}, false
	}
	x.saw(record)
	return done(record), true
}

// pick returns the record an inquiry settles on: a succeeded one in preference to a pending
// one, and a pending one to a declined one; nil when there is none. A record that does not
// match the intent is never taken for it: ErrCannotResolve.
func (x *execution[P, R]) pick(records []R) (*R, error) {
	var best *R
	bestRank := 0
	for i := range records {
		r := &records[i]
		if err := x.check(r); err != nil {
			return nil, err
		}
		if _, status := x.verdict(r); best == nil || status.rank() > bestRank {
			best, bestRank = r, status.rank()
		}
	}
	return best, nil
}

// check refuses a record found or read back that is not the intent's (Kind.Match), or whose
// status is none of ours.
func (x *execution[P, R]) check(r *R) error {
	id, status := x.verdict(r)
	if status.rank() == 0 {
		return fmt.Errorf("%s %s for %q has status %q: %w", x.kind.Name, id, x.ref, status, errMismatch)
	}
	if err := x.kind.Match(x.params, r); err != nil {
		return fmt.Errorf("%s %s for %q: %v: %w", x.kind.Name, id, x.ref, err, errMismatch)
	}
	return nil
}

// resendKey re-sends the same key to a provider that cannot be asked: the provider answers
// the first request instead of acting again, while it remembers the key.
func (x *execution[P, R]) resendKey(ctx context.Context) result[R] {
	if !x.keyed() {
		return failed[R](fmt.Errorf("error resolving %s %q: %w", x.kind.Name, x.ref, errNoResolution))
	}
	created := x.opts.KeyCreatedAt
	if x.caps.KeyRetention > 0 && !created.IsZero() && created.Before(x.opts.Now().Add(-x.caps.KeyRetention)) {
		return failed[R](fmt.Errorf("error resolving %s %q: key %q first sent at %s, provider keeps keys for %s: %w",
			x.kind.Name, x.ref, x.key, created.Format(time.RFC3339), x.caps.KeyRetention, errKeyExpired))
	}
	return x.send(ctx)
}

// readBack reads a pending effect as it stands now: by id, else by inquiry. It never sends.
func (x *execution[P, R]) readBack(ctx context.Context) result[R] {
	rctx, cancel := x.request(ctx)
	record, err := x.e.Get(rctx, x.pendingID)
	cancel()
	if errors.Is(err, ErrUnsupported) {
		r, held := failed[R](err), false
		if x.caps.Inquiry {
			r, held = x.inquire(ctx)
		}
		switch {
		case errors.Is(r.err, ErrUnsupported):
			return failed[R](fmt.Errorf("%s %s for %q is pending and can be read back neither by id nor by reference: %w",
				x.kind.Name, x.pendingID, x.ref, ErrCannotResolve))
		case !held && r.err == nil:
			return failed[R](phases.OutcomeUnknown(fmt.Errorf("pending %s %s for %q is no longer listed: %w",
				x.kind.Name, x.pendingID, x.ref, ErrNotFound)))
		}
		return r
	}
	if err != nil {
		err = fmt.Errorf("error reading back %s %s for %q: %w", x.kind.Name, x.pendingID, x.ref, err)
		if errors.Is(err, ErrNotFound) || !phases.IsRetryable(err) {
			return failed[R](phases.OutcomeUnknown(err))
		}
		return retryLater[R](err)
	}
	if err := x.check(record); err != nil {
		return failed[R](err)
	}
	x.saw(record)
	return done(record)
}

// pause waits before round n, if the rounds allow another and the wait fits in ctx.
func (x *execution[P, R]) pause(ctx context.Context, n int) bool {
	if n > x.opts.Retries {
		return false
	}
	d := x.opts.RetryDelay(n)
	return fits(ctx, d) && sleep.For(ctx, d)
}

// gaveUp is the error when no round is left: the effect still pending, or the last failure,
// unknown when one of this attempt's sends may have acted.
func (x *execution[P, R]) gaveUp(ctx context.Context) error {
	if x.pendingID != "" {
		since := x.opts.Now().Sub(x.pendingSince)
		return phases.RetryAfter(pendingPoll(since), fmt.Errorf("%s %s for %q pending for %s: %w",
			x.kind.Name, x.pendingID, x.ref, since.Round(time.Millisecond), ErrPending))
	}
	err := x.lastErr
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (gave up: %w)", err, ctxErr)
	}
	if x.outcome == phases.CallOutcomeUnknown && Classify(err) != phases.CallOutcomeUnknown {
		return Unknown(err)
	}
	return err
}

// pendingPoll is how long the engine waits before reading a pending effect again: half the
// time it has been pending, between 1s and 10m, so an effect pending for a day costs a few
// dozen reads, not thousands.
func pendingPoll(since time.Duration) time.Duration {
	return min(max(since/2, time.Second), 10*time.Minute)
}

// fits reports whether a wait of d leaves at least as much of ctx's time after it.
func fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) >= 2*d
}
