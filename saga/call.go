package saga

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// errLeaseEnding cuts a call whose lease could not be renewed before it would run out.
var errLeaseEnding = errors.New("the call was cut: its lease could not be renewed before it ran out")

// knownOutcome reports whether o is one of the outcome classes.
func knownOutcome(o phases.CallOutcome) bool {
	switch o {
	case phases.CallOutcomeSucceeded, phases.CallOutcomeDeclined, phases.CallOutcomeFailedBefore,
		phases.CallOutcomePending, phases.CallOutcomeUnknown:
		return true
	}
	return false
}

// callAt is step i when it is an external call.
func (e *execution) callAt(i int) (runstate.Step, bool) {
	if i >= len(e.op.Steps) {
		return runstate.Step{}, false
	}
	step := runstate.Step(e.op.Steps[i])
	return step, step.Call() != nil
}

// callStart is the journal row of call step, with the downstream reference it declared,
// derived from the values saved so far, or else the default one derived from the intent.
func (e *execution) callStart(step runstate.Step) (*callStart, error) {
	start := &callStart{step: step.Name(), aliases: step.Aliases(), window: e.c.callWindow(e.op, step.Name())}
	ref := step.Reference()
	if ref == nil {
		start.reference = runstate.DefaultReference(e.req.Scope.Tenant, e.req.Scope.Actor, e.req.Key, e.op.Name, step.Name())
		return start, nil
	}
	r, err := ref(e.st)
	if err != nil {
		return nil, fmt.Errorf("error deriving the reference of call %q: %w", step.Name(), err)
	}
	start.reference = r
	return start, nil
}

// call runs external call i outside any transaction. It is sent only under a lease that covers
// it, after its journal row committed: the write of the phase before it carried both; otherwise
// (the first step, a call after a call, a resume at a call) a fenced write of its own does, and
// claims the key first if it is not stored yet. The call's deadline ends a quarter of a lease
// before the lease does, heartbeats move both, and a lease found lost cuts it at once: one key's
// call never runs twice at once. Its outcome rides in the key's next write.
func (e *execution) call(ctx context.Context, i int) error {
	step := runstate.Step(e.op.Steps[i])
	j := e.journaled
	if j == nil || j.start.step != step.Name() {
		var err error
		if j, err = e.journal(ctx, step); err != nil {
			return err
		}
	}
	e.journaled = nil
	call := &runstate.Call{Step: step.Name(), Reference: j.start.reference,
		Prior: onLocalClock(j.written.prior, j.written.dbNow, j.at)}
	callCtx, span := e.traceCall(ctx, step.Name(), j.start.reference)
	if !time.Now().Before(e.leaseEnd.Add(-e.c.cfg.Lease / 4)) {
		// The write that renewed the lease took so long that it no longer covers a call: the
		// call is not sent, and a retry renews the lease again.
		e.done = &callDone{step: step.Name(), outcome: phases.CallOutcomeFailedBefore, inRow: j.inRow}
		e.endCall(span, errLeaseEnding)
		return errLeaseEnding
	}
	e.st.BeginCall(call)

	start := time.Now()
	err := e.guarded(callCtx, call, j, step.Call())
	outcome, providerID, recorded := e.st.EndCall()
	switch {
	case !recorded:
		outcome = string(phases.CallOutcomeSucceeded)
		if err != nil {
			outcome = string(phases.CallOutcomeUnknown)
		}
	case !knownOutcome(phases.CallOutcome(outcome)):
		// The journal holds the five classes only (its CHECK refuses any other): an outcome
		// outside them says nothing certain, which is what unknown means.
		e.c.cfg.Logger.WarnContext(ctx, "a call recorded an outcome that is not a class; journaled as unknown",
			"operation", e.op.Name, "key", e.req.Key, "step", step.Name(), "outcome", outcome)
		outcome = string(phases.CallOutcomeUnknown)
	}
	e.done = &callDone{step: step.Name(), outcome: phases.CallOutcome(outcome), providerID: providerID, inRow: j.inRow}
	e.endCall(span, err)
	e.c.observer.Call(e.op.Name, step.Name(), phases.CallOutcome(outcome), time.Since(start))
	if err != nil {
		return err
	}
	resp := e.stored()
	if resp == nil {
		return nil
	}
	w := e.advance("", resp)
	w.alone = true
	out, _, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w)
	if err != nil {
		return err
	}
	e.wrote(w, out, time.Now())
	e.answer = resp
	return nil
}

// journal commits call step's journal row with a renewed lease, in a write of its own: the claim
// of a key not stored yet, or a fenced write that keeps the key where it is.
func (e *execution) journal(ctx context.Context, step runstate.Step) (*journaledCall, error) {
	next, err := e.callStart(step)
	if err != nil {
		return nil, err
	}
	w := &keyWrite{kind: writeAdvance, status: KeyStatusStarted, recoveryPoint: e.rp, state: e.committed,
		lease: e.c.cfg.Lease, done: e.done, next: next}
	if e.stage == stageNew {
		w.state = e.st.Values()
		e.claiming(w)
		w.orNothing = true
	}
	sent := time.Now()
	out, won, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.requestFor(w), e.hash, w)
	if err == nil && !won {
		err = errDuplicate
	}
	if err != nil {
		return nil, err
	}
	e.wrote(w, out, sent)
	return e.journaled, nil
}

// guarded runs call fn under guard, its in-flight window journaled through the guard in the
// call's journal entry j. The guard is stopped however the call ends, also when its goroutine
// ends mid-call (an in-process crash): a dead execution must not keep renewing its lease.
func (e *execution) guarded(ctx context.Context, call *runstate.Call, j *journaledCall, fn runstate.CallFunc) (err error) {
	g := e.guard(ctx, call.Step, j)
	call.Declare = g.declare
	defer func() {
		if cause := g.stop(); cause != nil && err != nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
	}()
	return fn(g.ctx, e.st)
}

// guard returns the guard of a call: its context is bounded by CallTimeout, cut before the
// lease ends, kept leased by heartbeats every third of a lease, and cut at once when a heartbeat
// finds the lease lost. One timer serves the three, set for whichever comes first: a call
// shorter than a third of a lease starts no goroutine.
func (e *execution) guard(ctx context.Context, step string, j *journaledCall) *callGuard {
	now := time.Now()
	g := &callGuard{e: e, step: step, window: j.start.window, inRow: j.inRow,
		beatAt: now.Add(e.c.cfg.Lease / 3), timeoutAt: now.Add(e.c.cfg.CallTimeout)}
	cctx, cancel := context.WithCancelCause(ctx)
	g.ctx, g.cancel = &callContext{Context: cctx, deadline: g.timeoutAt}, cancel
	g.mu.Lock()
	defer g.mu.Unlock()
	g.timer = time.AfterFunc(g.next(now), g.fire)
	return g
}

// callGuard keeps one call leased, or cuts it.
type callGuard struct {
	e      *execution
	ctx    context.Context
	step   string
	cancel context.CancelCauseFunc
	// mu is held by a heartbeat while it writes, so that stop waits for it: a stopped guard
	// never renews the lease again.
	mu      sync.Mutex
	stopped bool
	cause   error
	timer   *time.Timer
	// beatAt is when the next heartbeat is due, timeoutAt when CallTimeout passes; the cut is
	// a quarter of a lease before the lease's end.
	beatAt, timeoutAt time.Time
	// window is the in-flight window the call's journal entry holds; inRow is true when that
	// entry is in the key row.
	window time.Duration
	inRow  bool
}

// callContext is a call's context: the guard's cancelable context with CallTimeout as its
// deadline, done with context.DeadlineExceeded once that passes (as a context.WithTimeout's),
// with the guard's cause when the guard cuts it.
type callContext struct {
	context.Context // context.WithCancelCause of the execution's context
	deadline        time.Time
}

func (c *callContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *callContext) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == context.DeadlineExceeded {
		return context.DeadlineExceeded
	}
	return err
}

// cutAt is when the call is cut: a quarter of a lease before the lease ends.
func (g *callGuard) cutAt() time.Time { return g.e.leaseEnd.Add(-g.e.c.cfg.Lease / 4) }

// next is how long from now until the guard's next event: the heartbeat, the cut or the
// timeout.
func (g *callGuard) next(now time.Time) time.Duration {
	at := g.beatAt
	if cut := g.cutAt(); cut.Before(at) {
		at = cut
	}
	if g.timeoutAt.Before(at) {
		at = g.timeoutAt
	}
	return at.Sub(now)
}

// fire handles what is due (the timeout, the cut or a heartbeat) and sets the timer for the
// next event.
func (g *callGuard) fire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.cause != nil || g.ctx.Err() != nil {
		return
	}
	now := time.Now()
	switch {
	case !now.Before(g.timeoutAt):
		g.cancel(context.DeadlineExceeded)
		return
	case !now.Before(g.cutAt()):
		// The lease could not be renewed before it would run out.
		g.end(errLeaseEnding)
		return
	case !now.Before(g.beatAt):
		g.heartbeat()
		if g.cause != nil || g.ctx.Err() != nil {
			return
		}
		now = time.Now()
		g.beatAt = now.Add(g.e.c.cfg.Lease / 3)
	}
	g.timer.Reset(g.next(now))
}

func (g *callGuard) end(cause error) {
	if g.stopped || g.cause != nil {
		return
	}
	g.cause = cause
	g.cancel(cause)
}

// heartbeat renews the lease, which moves the cut with it; g.mu is held.
func (g *callGuard) heartbeat() {
	if err := g.renew(g.ctx, g.window); err != nil && !errors.Is(err, ErrLeaseLost) {
		g.e.c.cfg.Logger.WarnContext(g.ctx, "could not renew the lease of a call; it is cut before the lease ends",
			"operation", g.e.op.Name, "key", g.e.req.Key, "step", g.step, "error", err)
	}
}

// declare journals window as the call's in-flight window before the call sends a request
// (phases.Run.DeclareInFlight): when it is longer than the one its journal row holds, in a
// heartbeat that raises it. The client remembers it as the step's window, which the next
// attempts' journal rows carry from the start. An error means the request must not be sent.
func (g *callGuard) declare(ctx context.Context, window time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.e.c.learnWindow(g.e.op, g.step, window)
	if g.stopped || g.cause != nil {
		return fmt.Errorf("the call's guard ended: %w", context.Cause(g.ctx))
	}
	if window <= g.window {
		return nil
	}
	if err := g.renew(ctx, window); err != nil {
		return fmt.Errorf("error journaling the call's in-flight window: %w", err)
	}
	g.window = window
	return nil
}

// renew is a heartbeat with window as the journaled in-flight window; g.mu is held. It moves the
// cut with the lease, and ends the guard when the lease was lost. It gives up at the cut (or the
// timeout): a heartbeat that hangs (a lock, a network without answers) must not hold back the
// cut, which the same timer and g.mu serve.
func (g *callGuard) renew(ctx context.Context, window time.Duration) error {
	e, lease := g.e, g.e.c.cfg.Lease
	limit := g.cutAt()
	if g.timeoutAt.Before(limit) {
		limit = g.timeoutAt
	}
	ctx, cancel := context.WithDeadline(ctx, limit)
	defer cancel()
	sent := time.Now()
	left, err := heartbeat(ctx, e.c.cfg.DB, &e.h, lease, g.step, window, g.inRow)
	switch {
	case errors.Is(err, ErrLeaseLost):
		g.end(ErrLeaseLost)
		return err
	case err != nil:
		return err
	}
	e.leaseFrom(sent, left)
	g.timer.Reset(g.next(time.Now()))
	return nil
}

// stop ends the guard, waiting for a heartbeat under way, and returns why it cut the call.
func (g *callGuard) stop() error {
	g.mu.Lock()
	g.stopped = true
	g.timer.Stop()
	cause := g.cause
	g.mu.Unlock()
	g.cancel(nil)
	return cause
}
