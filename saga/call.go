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
// derived from the values saved so far.
func (e *execution) callStart(step runstate.Step) (*callStart, error) {
	start := &callStart{step: step.Name(), aliases: step.Aliases()}
	if ref := step.Reference(); ref != nil {
		r, err := ref(e.st)
		if err != nil {
			return nil, fmt.Errorf("error deriving the reference of call %q: %w", step.Name(), err)
		}
		start.reference = r
	}
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
	call := &runstate.Call{Step: step.Name(), Reference: j.start.reference, Prior: j.written.prior}
	if len(call.Prior) > 0 {
		call.QuietAt = j.at.Add(j.written.quietIn)
	}
	if !time.Now().Before(e.leaseEnd.Add(-e.c.cfg.Lease / 4)) {
		// The write that renewed the lease took so long that it no longer covers a call: the
		// call is not sent, and a retry renews the lease again.
		e.done = &callDone{step: step.Name(), outcome: phases.CallOutcomeFailedBefore}
		return errLeaseEnding
	}
	e.st.BeginCall(call)

	start := time.Now()
	err := e.guarded(ctx, step.Name(), step.Call())
	outcome, providerID, recorded := e.st.EndCall()
	switch {
	case !recorded:
		outcome = string(phases.CallOutcomeSucceeded)
		if err != nil {
			outcome = string(phases.CallOutcomeUnknown)
		}
	case !knownOutcome(phases.CallOutcome(outcome)):
		// The journal holds the five classes only (the engine, not a CHECK, keeps it so): an
		// outcome outside them says nothing certain, which is what unknown means.
		e.c.cfg.Logger.WarnContext(ctx, "a call recorded an outcome that is not a class; journaled as unknown",
			"operation", e.op.Name, "key", e.req.Key, "step", step.Name(), "outcome", outcome)
		outcome = string(phases.CallOutcomeUnknown)
	}
	e.done = &callDone{step: step.Name(), outcome: phases.CallOutcome(outcome), providerID: providerID}
	e.c.observer.Call(e.op.Name, step.Name(), phases.CallOutcome(outcome), time.Since(start))
	if err != nil {
		return err
	}
	resp := e.stored()
	if resp == nil {
		return nil
	}
	w := e.advance("", resp)
	out, _, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w, &e.args)
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
	if w.state == nil {
		w.state = e.st.Values()
	}
	if !e.persisted {
		e.claiming()
		w.kind, w.orNothing = writeClaim, true
	}
	sent := time.Now()
	out, won, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.requestFor(w), e.hash, w, &e.args)
	if err == nil && !won {
		err = errDuplicate
	}
	if err != nil {
		return nil, err
	}
	e.wrote(w, out, sent)
	return e.journaled, nil
}

// guarded runs call under guard. The guard is stopped however the call ends, also when its
// goroutine ends mid-call (an in-process crash): a dead execution must not keep renewing its lease.
func (e *execution) guarded(ctx context.Context, step string, call runstate.CallFunc) (err error) {
	callCtx, stop := e.guard(ctx, step)
	defer func() {
		if cause := stop(); cause != nil && err != nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
	}()
	return call(callCtx, e.st)
}

// guard returns the context a call runs in: bounded by CallTimeout, cut before the lease ends,
// kept leased by heartbeats every third of a lease, and cut at once when a heartbeat finds the
// lease lost. stop ends it and returns why the guard cut the call, if it did. Both the cut and
// the heartbeat are timers: a call shorter than a third of a lease starts no goroutine.
func (e *execution) guard(ctx context.Context, step string) (context.Context, func() error) {
	ctx, cancelTimeout := context.WithTimeout(ctx, e.c.cfg.CallTimeout)
	ctx, cancel := context.WithCancelCause(ctx)
	g := &callGuard{e: e, ctx: ctx, step: step, cancel: cancel, cancelTimeout: cancelTimeout}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = time.AfterFunc(time.Until(e.leaseEnd.Add(-e.c.cfg.Lease/4)), g.leaseEnding)
	g.beat = time.AfterFunc(e.c.cfg.Lease/3, g.heartbeat)
	return ctx, g.stop
}

// callGuard keeps one call leased, or cuts it.
type callGuard struct {
	e             *execution
	ctx           context.Context
	step          string
	cancel        context.CancelCauseFunc
	cancelTimeout context.CancelFunc
	// mu is held by a heartbeat while it writes, so that stop waits for it: a stopped guard
	// never renews the lease again.
	mu        sync.Mutex
	stopped   bool
	cause     error
	cut, beat *time.Timer
}

// leaseEnding cuts the call: its lease could not be renewed before it would run out.
func (g *callGuard) leaseEnding() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.end(errLeaseEnding)
}

func (g *callGuard) end(cause error) {
	if g.stopped || g.cause != nil {
		return
	}
	g.cause = cause
	g.cancel(cause)
}

// heartbeat renews the lease, moves the cut with it, and comes back a third of a lease later.
func (g *callGuard) heartbeat() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.cause != nil || g.ctx.Err() != nil {
		return
	}
	e, lease := g.e, g.e.c.cfg.Lease
	sent := time.Now()
	left, err := heartbeat(g.ctx, e.c.cfg.DB, &e.h, lease, g.step)
	switch {
	case errors.Is(err, ErrLeaseLost):
		g.end(ErrLeaseLost)
		return
	case err != nil:
		e.c.cfg.Logger.WarnContext(g.ctx, "could not renew the lease of a call; it is cut before the lease ends",
			"operation", e.op.Name, "key", e.req.Key, "step", g.step, "error", err)
	default:
		e.leaseFrom(sent, left)
		g.cut.Reset(time.Until(e.leaseEnd.Add(-lease / 4)))
	}
	g.beat.Reset(lease / 3)
}

// stop ends the guard, waiting for a heartbeat under way, and returns why it cut the call.
func (g *callGuard) stop() error {
	g.mu.Lock()
	g.stopped = true
	g.cut.Stop()
	g.beat.Stop()
	cause := g.cause
	g.mu.Unlock()
	g.cancel(nil)
	g.cancelTimeout()
	return cause
}
