package gateway

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// Journal is the engine's record of a call's attempts; *phases.Run implements it for a call step.
type Journal interface {
	// PriorCalls returns the earlier attempts of this call, oldest first, on this process's
	// clock.
	PriorCalls() []phases.CallRecord
	// DeclareInFlight journals, before a request is sent, the provider's in-flight window in
	// force (Capabilities.MaxInFlight); when it returns an error, nothing may be sent.
	DeclareInFlight(ctx context.Context, window time.Duration) error
	// RecordCall records what this attempt came to, and the provider's id for its charge when
	// it knows one.
	RecordCall(outcome phases.CallOutcome, providerID string)
}

// ExecuteOpts are the optional settings of one Execute call.
type ExecuteOpts struct {
	// MayHaveReached says an earlier attempt may have reached the provider, for a caller that
	// has no journal (Execute given a nil Journal) and resumes a call. With a journal, Execute
	// reads this from the prior calls and the field only adds to them. Defaults to false.
	MayHaveReached bool
	// KeyCreatedAt is when the downstream key was first sent, compared with
	// Capabilities.KeyRetention before the key is re-sent; the start of the oldest prior call in
	// the journal is used when it is earlier. Defaults to that start, or to the zero time (no
	// check) when there is no prior call.
	KeyCreatedAt time.Time
	// PendingWindow is how long a charge may stay pending, counted from the first attempt that
	// found it pending, before Execute gives up on it with ErrPendingTooLong (an outcome nothing
	// can resolve: the engine parks the key). Defaults to 24h.
	PendingWindow time.Duration
	// Retries is how many more rounds Execute makes in-process after the first one before it
	// leaves the call to the engine's next attempt; a round is a send, an inquiry or a read of a
	// pending charge. Defaults to 4; a negative value means none.
	Retries int
	// RetryDelay returns the pause before retry n (1 for the first). Defaults to 100ms doubling
	// up to 2s, each drawn uniformly from its upper half (jitter).
	RetryDelay func(n int) time.Duration
	// Now returns the current time, for key windows, pending windows and in-flight windows
	// (pauses themselves run on real timers). Defaults to time.Now.
	Now func() time.Time
}

func (o *ExecuteOpts) withDefaults() ExecuteOpts {
	var out ExecuteOpts
	if o != nil {
		out = *o
	}
	if out.PendingWindow == 0 {
		out.PendingWindow = 24 * time.Hour
	}
	switch {
	case out.Retries == 0:
		out.Retries = 4
	case out.Retries < 0:
		out.Retries = 0
	}
	if out.RetryDelay == nil {
		out.RetryDelay = defaultRetryDelay
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// defaultRetryDelay is ExecuteOpts.RetryDelay's default: 100ms doubling up to 2s for retry n
// (1-based), each drawn uniformly from its upper half so that callers retrying together spread
// out.
func defaultRetryDelay(n int) time.Duration {
	d := 2 * time.Second
	if n < 6 {
		d = min(d, 100*time.Millisecond<<max(n-1, 0))
	}
	return d/2 + rand.N(d/2+1)
}

// Execute makes one charge exactly once on gw, retrying in-process while that is safe, and
// records in j (when not nil) what this attempt came to, exactly once on every return path.
//
// It returns the provider's final Charge, succeeded or declined (a decline is a result, not an
// error), or an error the engine acts on by behaviour:
//
//   - A charge the journal knows by id (recorded pending) is never sent again: it is read back
//     (Get, else inquiry) until it is final. Still pending when the rounds or ctx run out: an
//     ErrPending in phases.RetryAfter; pending past opts.PendingWindow: ErrPendingTooLong.
//   - When an earlier attempt may have reached the provider (a prior call not recorded as
//     certainly not done, or opts.MayHaveReached) and the provider has inquiry, it asks by
//     reference first. So it does before the first send to a provider with inquiry that cannot
//     de-duplicate the charge by its idempotency key: a re-execution after a failover that lost
//     the key's commits (and its journal) finds the charge the first execution made. A charge
//     found is taken only if it matches the intent (amount, currency, reference; ErrMismatch
//     otherwise), a pending one is followed as above. An empty answer
//     counts only once every earlier attempt (and every send of this one) that may have
//     reached the provider has been quiet for the longer of the in-flight window it was sent
//     under and Capabilities.MaxInFlight now: before that it waits when the wait fits in ctx
//     (at most half of the time left), else returns ErrInFlight in phases.RetryAfter.
//   - Before every send it journals the in-flight window in force (j.DeclareInFlight); when
//     that fails it sends nothing.
//   - Without inquiry it re-sends the same key only if the provider honours keys
//     (ErrCannotResolve otherwise) and the key is within Capabilities.KeyRetention
//     (ErrKeyExpired otherwise). Both satisfy phases.IsOutcomeUnknown: park, never compensate.
//   - A send that certainly did not act is retried; one whose outcome is unknown is resolved
//     the same way (inquiry, measured from when that send stopped, or the same key), never by
//     guessing. A charge answered pending is never sent again.
//   - When the rounds or ctx run out, it returns the last failure, an UnknownError when this
//     attempt may have charged.
//
// What it records: succeeded, declined or pending (with the charge's id) when it saw the charge;
// unknown when a send of this attempt may have acted unresolved; failed_before when this attempt
// certainly charged nothing (its sends failed before acting, or it sent nothing: it only waited,
// or learnt nothing new).
func Execute(ctx context.Context, j Journal, gw Gateway, params ChargeParams, opts *ExecuteOpts) (*Charge, error) {
	x := newExecution(j, gw, params, opts.withDefaults())
	charge, err := x.run(ctx)
	if j != nil {
		j.RecordCall(x.outcome, x.providerID)
	}
	return charge, err
}

// execution is the state of one Execute call across its rounds.
type execution struct {
	gw     Gateway
	caps   Capabilities
	params ChargeParams
	opts   ExecuteOpts

	// j is the call's journal; nil when Execute was given none.
	j Journal
	// attempts are the earlier attempts and this attempt's own sends whose outcome is unknown,
	// each with the window it sent under: what an empty inquiry must outwait
	// (emptyInquiryConclusiveAt).
	attempts []phases.CallRecord
	// unresolved is true while some attempt may have charged and nothing has told.
	unresolved bool
	// pendingID is the provider's id of a charge known to be pending, read back, never re-sent.
	pendingID string
	// pendingSince is when the charge was first seen pending.
	pendingSince time.Time
	// known is a final charge the journal already holds.
	known *Charge

	// outcome and providerID are what this attempt came to so far (see Execute).
	outcome    phases.CallOutcome
	providerID string
	// lastErr is the last failure of a round that may be retried.
	lastErr error
}

func newExecution(j Journal, gw Gateway, params ChargeParams, o ExecuteOpts) *execution {
	x := &execution{j: j, gw: gw, caps: gw.Capabilities(), params: params, opts: o, outcome: phases.CallOutcomeFailedBefore}
	// A provider that cannot tell a repeated charge by its key is asked before the first send
	// too: a failover that lost acknowledged commits loses the journal with them, and an earlier
	// execution of the same intent may have charged under the same reference.
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
	// The latest attempt that saw the charge itself decides: it is never sent again.
	for i := len(prior) - 1; i >= 0; i-- {
		c := prior[i]
		if c.ProviderID == "" {
			continue
		}
		switch c.Outcome {
		case phases.CallOutcomePending:
			x.pendingID = c.ProviderID
		case phases.CallOutcomeSucceeded, phases.CallOutcomeDeclined:
			status := ChargeStatusSucceeded
			if c.Outcome == phases.CallOutcomeDeclined {
				status = ChargeStatusDeclined
			}
			x.known = &Charge{ID: c.ProviderID, Amount: params.Amount, Currency: params.Currency, Reference: params.Reference, Status: status}
		default:
			continue
		}
		break
	}
	return x
}

// keyed reports whether the provider de-duplicates this charge by its idempotency key.
func (x *execution) keyed() bool { return x.caps.IdempotencyKeys && x.params.IdempotencyKey != "" }

// result is what one step of a round came to: a charge (final or pending), or an error that
// the next round may retry (retry) or that ends Execute.
type result struct {
	charge *Charge
	err    error
	retry  bool
}

func done(c *Charge) result       { return result{charge: c} }
func failed(err error) result     { return result{err: err} }
func retryable(err error) result  { return result{err: err, retry: phases.IsRetryable(err)} }
func retryLater(err error) result { return result{err: err, retry: true} }

// run makes rounds until a final charge, a failure that must not be retried here, or the end
// of the rounds or of ctx.
func (x *execution) run(ctx context.Context) (*Charge, error) {
	if x.known != nil {
		// The journal holds the final answer: nothing to send or ask.
		x.saw(x.known)
		return x.known, nil
	}
	for round := 0; ; round++ {
		if round > 0 && !x.pause(ctx, round) {
			return nil, x.gaveUp(ctx)
		}
		var r result
		switch {
		case x.pendingID != "":
			r = x.readBack(ctx)
		case x.unresolved:
			r = x.resolve(ctx)
		default:
			r = x.send(ctx)
		}
		switch {
		case r.err != nil && !r.retry:
			return nil, r.err
		case r.err != nil:
			x.lastErr = r.err
		case r.charge.Status.Final():
			return r.charge, nil
		default: // pending: follow it
			if err := x.followPending(r.charge); err != nil {
				return nil, err
			}
		}
	}
}

// saw notes a charge this attempt saw (sent, found or read back).
func (x *execution) saw(c *Charge) {
	x.outcome, x.providerID = Classify(c, nil), c.ID
}

// followPending notes that charge is pending: from now on it is read back, never re-sent,
// until it is final or pending longer than the window.
func (x *execution) followPending(charge *Charge) error {
	if charge.ID == "" {
		// Nothing to read it back by, and sending again could be a second charge.
		return fmt.Errorf("charge for %q is pending without an id: %w", x.params.Reference, ErrCannotResolve)
	}
	now := x.opts.Now()
	x.pendingID, x.unresolved = charge.ID, false
	if x.pendingSince.IsZero() {
		x.pendingSince = now
	}
	if since := now.Sub(x.pendingSince); since > x.opts.PendingWindow {
		return fmt.Errorf("charge %s for %q pending for %s (window %s): %w",
			charge.ID, x.params.Reference, since.Round(time.Second), x.opts.PendingWindow, ErrPendingTooLong)
	}
	return nil
}

// send sends the charge once, after journaling the in-flight window it is sent under.
func (x *execution) send(ctx context.Context) result {
	window := x.caps.MaxInFlight
	if x.j != nil {
		if err := x.j.DeclareInFlight(ctx, window); err != nil {
			// Unjournaled, a request that lands late could be taken for no charge: not sent.
			return failed(x.classed(fmt.Errorf("error journaling the in-flight window of charge %q, not sent: %w", x.params.Reference, err)))
		}
	}
	charge, err := x.gw.Charge(ctx, x.params)
	switch Classify(charge, err) {
	case phases.CallOutcomeSucceeded, phases.CallOutcomeDeclined, phases.CallOutcomePending:
		x.saw(charge)
		return done(charge)
	case phases.CallOutcomeFailedBefore:
		return retryable(fmt.Errorf("error charging %q: %w", x.params.Reference, err))
	}
	// It may have charged, and may still land until it has been quiet for its window.
	x.outcome, x.unresolved = phases.CallOutcomeUnknown, true
	now := x.opts.Now()
	x.attempts = append(x.attempts, phases.CallRecord{StartedAt: now, EndedAt: &now, MaxInFlight: window})
	if err == nil {
		err = &UnknownError{Err: fmt.Errorf("charge %s has status %q", charge.ID, charge.Status)}
	}
	err = fmt.Errorf("error charging %q: %w", x.params.Reference, err)
	if phases.IsOutcomeUnknown(err) {
		return failed(err)
	}
	if !x.caps.Inquiry && !x.keyed() {
		// Neither inquiry nor keys: another send could be a second charge. Never guess.
		return failed(fmt.Errorf("%w (%w)", ErrCannotResolve, err))
	}
	return retryLater(err)
}

// resolve settles what an earlier attempt did before anything is sent again: by inquiry when
// the provider has it (then sends when nothing can have landed), else by re-sending the key.
func (x *execution) resolve(ctx context.Context) result {
	if !x.caps.Inquiry {
		return x.resendKey(ctx)
	}
	r, held := x.inquire(ctx)
	if held || r.err != nil {
		return x.unlessUnsupported(ctx, r)
	}
	if wait := emptyInquiryConclusiveAt(x.attempts, x.caps.MaxInFlight).Sub(x.opts.Now()); wait > 0 {
		// Nothing found yet, and an earlier request may still land: ask again after the window.
		inFlight := fmt.Errorf("charge %q: %w (%s left)", x.params.Reference, ErrInFlight, wait.Round(time.Millisecond))
		if !fits(ctx, wait) {
			return failed(phases.RetryAfter(wait, x.classed(inFlight)))
		}
		if !sleep(ctx, wait) {
			return failed(x.classed(fmt.Errorf("%w (gave up: %w)", inFlight, ctx.Err())))
		}
		if r, held = x.inquire(ctx); held || r.err != nil {
			return x.unlessUnsupported(ctx, r)
		}
	}
	// Authoritative, and nothing can still land: no attempt charged.
	x.unresolved, x.outcome = false, phases.CallOutcomeFailedBefore
	return x.send(ctx)
}

// unlessUnsupported returns r, or when the provider stopped answering inquiries, resolves by
// key instead.
func (x *execution) unlessUnsupported(ctx context.Context, r result) result {
	if !errors.Is(r.err, ErrUnsupported) {
		return r
	}
	x.caps = x.gw.Capabilities()
	x.caps.Inquiry = false
	return x.resendKey(ctx)
}

// classed wraps err, a failure of this attempt to resolve an earlier one, so that it tells
// what this attempt came to: unknown when one of its own sends may have charged, else not done.
func (x *execution) classed(err error) error {
	if x.outcome == phases.CallOutcomeUnknown {
		return &UnknownError{Err: err}
	}
	return &NotDoneError{Err: err}
}

// inquire asks the provider what it holds for the reference: held is false when it holds
// nothing (and r is empty). An error wrapping ErrUnsupported is returned as is.
func (x *execution) inquire(ctx context.Context) (r result, held bool) {
	found, err := x.gw.Inquire(ctx, x.params.Reference)
	switch {
	case errors.Is(err, ErrUnsupported):
		return failed(err), false
	case err != nil:
		err = fmt.Errorf("error inquiring about charge %q: %w", x.params.Reference, err)
		if !phases.IsRetryable(err) {
			// Nothing else can tell what the earlier attempt did.
			return failed(phases.OutcomeUnknown(err)), false
		}
		return retryLater(x.classed(err)), false
	}
	charge, err := x.pick(found)
	switch {
	case err != nil:
		return failed(err), false
	case charge == nil:
		return result{}, false
	}
	x.saw(charge)
	return done(charge), true
}

// pick returns the charge an inquiry settles on: a succeeded one in preference to a pending
// one, and a pending one to a declined one; nil when there is none. A charge that does not
// match the intent is never taken for it: ErrMismatch.
func (x *execution) pick(charges []Charge) (*Charge, error) {
	var best *Charge
	for i := range charges {
		c := &charges[i]
		if err := x.check(c); err != nil {
			return nil, err
		}
		if best == nil || rank(c.Status) > rank(best.Status) {
			best = c
		}
	}
	return best, nil
}

// rank orders the statuses an inquiry may find by what they settle: money moved, money may
// move, nothing moved.
func rank(s ChargeStatus) int {
	switch s {
	case ChargeStatusSucceeded:
		return 3
	case ChargeStatusPending:
		return 2
	case ChargeStatusDeclined:
		return 1
	}
	return 0
}

// check refuses a charge found or read back that is not the intent's: another amount,
// currency or reference, or a status that is none of ours.
func (x *execution) check(c *Charge) error {
	if c.matches(x.params) && rank(c.Status) > 0 {
		return nil
	}
	return fmt.Errorf("charge %s for %q is %d %s %q %q, the intent %d %s: %w", c.ID, x.params.Reference,
		c.Amount, c.Currency, c.Reference, c.Status, x.params.Amount, x.params.Currency, ErrMismatch)
}

// resendKey re-sends the same key to a provider that cannot be asked: the provider answers
// the first charge instead of making a second one, while it remembers the key.
func (x *execution) resendKey(ctx context.Context) result {
	if !x.keyed() {
		return failed(fmt.Errorf("error resolving charge %q: %w", x.params.Reference, ErrCannotResolve))
	}
	created := x.opts.KeyCreatedAt
	if x.caps.KeyRetention > 0 && !created.IsZero() && created.Before(x.opts.Now().Add(-x.caps.KeyRetention)) {
		return failed(fmt.Errorf("error resolving charge %q: key %q first sent at %s, provider keeps keys for %s: %w",
			x.params.Reference, x.params.IdempotencyKey, created.Format(time.RFC3339), x.caps.KeyRetention, ErrKeyExpired))
	}
	return x.send(ctx)
}

// readBack reads a pending charge as it stands now: by id, else by inquiry. It never sends.
func (x *execution) readBack(ctx context.Context) result {
	charge, err := x.gw.Get(ctx, x.pendingID)
	if errors.Is(err, ErrUnsupported) {
		r, held := failed(err), false
		if x.caps.Inquiry {
			r, held = x.inquire(ctx)
		}
		switch {
		case errors.Is(r.err, ErrUnsupported):
			return failed(fmt.Errorf("charge %s for %q is pending and can be read back neither by id nor by reference: %w",
				x.pendingID, x.params.Reference, ErrCannotResolve))
		case !held && r.err == nil:
			return failed(phases.OutcomeUnknown(fmt.Errorf("pending charge %s for %q is no longer listed: %w",
				x.pendingID, x.params.Reference, ErrNotFound)))
		}
		return r
	}
	if err != nil {
		err = fmt.Errorf("error reading back charge %s for %q: %w", x.pendingID, x.params.Reference, err)
		if errors.Is(err, ErrNotFound) || !phases.IsRetryable(err) {
			return failed(phases.OutcomeUnknown(err))
		}
		return retryLater(err)
	}
	if err := x.check(charge); err != nil {
		return failed(err)
	}
	x.saw(charge)
	return done(charge)
}

// pause waits before round n, if the rounds allow another and the wait fits in ctx.
func (x *execution) pause(ctx context.Context, n int) bool {
	if n > x.opts.Retries {
		return false
	}
	d := x.opts.RetryDelay(n)
	return fits(ctx, d) && sleep(ctx, d)
}

// gaveUp is the error when no round is left: the charge still pending, or the last failure,
// unknown when one of this attempt's sends may have charged.
func (x *execution) gaveUp(ctx context.Context) error {
	if x.pendingID != "" {
		since := x.opts.Now().Sub(x.pendingSince)
		return phases.RetryAfter(pendingPoll(since), fmt.Errorf("charge %s for %q pending for %s: %w",
			x.pendingID, x.params.Reference, since.Round(time.Millisecond), ErrPending))
	}
	err := x.lastErr
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (gave up: %w)", err, ctxErr)
	}
	if x.outcome == phases.CallOutcomeUnknown && Classify(nil, err) != phases.CallOutcomeUnknown {
		return &UnknownError{Err: err}
	}
	return err
}

// pendingPoll is how long the engine waits before reading a pending charge again: half the
// time it has been pending, between 1s and 10m, so a charge pending for a day costs a few
// dozen reads, not thousands.
func pendingPoll(since time.Duration) time.Duration {
	return min(max(since/2, time.Second), 10*time.Minute)
}

// fits reports whether a wait of d leaves at least as much of ctx's time after it.
func fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) >= 2*d
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
