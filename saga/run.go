package saga

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// A request's way through the engine, top to bottom: Run checks the request and fingerprints its
// body (prepare), then admits it. A key already stored is answered from one read of it (decide:
// replay, 422, 409 or a bounded wait, parked, not yet due, or a takeover that resumes it); a new
// key's steps run (execution.go), each atomic phase in its own transaction (phase.go), each
// external call under its lease (call.go).
//
// The first round trip depends on the request alone. An operation that begins with an atomic
// phase runs it at once: the key is read right before the phase's first statement, on the
// phase's own connection, and a key found stored stops the phase (its transaction never begins)
// to be answered from what was read; a phase that sends no statement claims the key with its
// commit, alone, in one round trip, and a duplicate's claim finds the key stored and reads it. An
// operation that begins with a call reads the key first, then claims it with the call's journal
// entry.

// Run executes an operation under req's key and returns its response.
//
// The first request for a key runs the operation's steps; each atomic phase commits with the
// key's recovery point. A retry of a completed key replays the stored response (Replayed). A key
// reused with another method, path or body returns ErrKeyReused; one whose lease another
// execution holds returns an *InProgressError with the lease left; a started key whose lease
// expired is taken over and resumed from its recovery point once its next attempt is due
// (before that, a *TransientError with the time left, and no attempt spent). A body that fails
// the operation's validation, or that the database refuses as data, returns an
// *InvalidRequestError and stores nothing. A transient failure returns a *TransientError and
// stores nothing. A parked key returns a *ParkedError.
//
// The execution is detached from ctx's cancellation: a client that goes away does not cut an
// operation between a call and the phase that records it. Each phase and call has its own bound.
// Only a duplicate's wait for the execution in flight (WaitInFlight) ends with ctx.
func (c *Client) Run(ctx context.Context, operation string, req *Request) (*Result, error) {
	res, err := c.run(ctx, operation, req)
	return c.observed(operation, res, err)
}

func (c *Client) run(ctx context.Context, operation string, req *Request) (*Result, error) {
	op, hash, err := c.prepare(operation, req)
	if err != nil {
		return nil, err
	}
	e := c.newExecution(op, req, hash, byClient)
	e.caller = ctx
	ctx = e.traceRequest(context.WithoutCancel(ctx))
	if op.Validate != nil {
		if verr := op.Validate(req.Body); verr != nil {
			return e.traced(e.refuseInvalid(ctx, c.cfg.DB, verr, true))
		}
	}
	return e.traced(e.admit(ctx))
}

// prepare finds the operation, checks the request and fingerprints its body: what Run and RunTx
// do before touching the database.
func (c *Client) prepare(operation string, req *Request) (*phases.Operation, []byte, error) {
	op, err := c.operation(operation)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRequest(req); err != nil {
		return nil, nil, err
	}
	hash, err := fingerprint(req.Body)
	if err != nil {
		return nil, nil, &InvalidRequestError{Err: fmt.Errorf("%w: %v", errInvalidJSON, err)}
	}
	return op, hash, nil
}

// admit runs a new key's steps, and answers a key already stored from one read of it. An
// operation that begins with an atomic phase reads the key inside that phase, right before its
// first statement (phase.go); one that begins with a call reads it here.
func (e *execution) admit(ctx context.Context) (*Result, error) {
	if runstate.Step(e.op.Steps[0]).Atomic() != nil {
		return e.execute(ctx, 0)
	}
	found, err := readHead(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.keyHead())
	switch {
	case err != nil:
		return nil, transient(err, 0)
	case found:
		return e.decide(ctx, e.head, decideOpts{mayTakeOver: true})
	}
	return e.execute(ctx, 0)
}

// refuseInvalid answers a body that failed the operation's validation. The key's fingerprint is
// checked first: a reused key answers 422 (or replays) even when this body is also invalid; an
// unknown key answers *InvalidRequestError and stores nothing.
func (e *execution) refuseInvalid(ctx context.Context, q queryer, verr error, mayTakeOver bool) (*Result, error) {
	found, err := readHead(ctx, q, e.req.Scope, e.req.Key, e.keyHead())
	switch {
	case err != nil:
		return nil, transient(err, 0)
	case !found:
		return nil, &InvalidRequestError{Err: verr}
	}
	return e.decide(ctx, e.head, decideOpts{mayTakeOver: mayTakeOver})
}

// decideOpts say what decide may still do with a stored key.
type decideOpts struct {
	// mayTakeOver is false where a takeover must not happen (RunTx, or after losing a race for
	// the key): a key that could be taken over is then answered as in progress.
	mayTakeOver bool
	// waited is true once the request waited for the execution in flight: it waits once.
	waited bool
}

// decide answers a request whose key is already stored: mismatch, replay, parked, in progress
// (or a bounded wait for it), not yet due, or a takeover of an expired lease followed by a
// resume.
func (e *execution) decide(ctx context.Context, k *keyHead, o decideOpts) (*Result, error) {
	if !isOperation(e.op, k.Operation) || k.Method != e.req.Method || k.Path != e.req.Path || !bytes.Equal(k.RequestHash, e.hash) {
		return nil, ErrKeyReused
	}
	switch k.Status {
	case KeyStatusCompleted:
		if e.stage != stageNew {
			// This request held the key and another execution finished it meanwhile: its
			// answer, not a replay.
			return &Result{Response: k.Response, Resumed: e.st != nil && e.st.Resumed()}, nil
		}
		return &Result{Response: k.Response, Replayed: true}, nil
	case KeyStatusParked:
		return nil, &ParkedError{Reason: k.ParkedReason, LastError: k.LastError}
	}
	if k.LeaseLeft > 0 {
		if e.op.WaitInFlight > 0 && !o.waited {
			// The operation prefers an answer to a 409: wait, bounded, for the execution in
			// flight, then decide again on the key as it is then.
			waitCtx, stop := e.callerBound(ctx)
			later, err := e.c.waitForKey(waitCtx, e.req.Scope, e.req.Key, e.op.WaitInFlight)
			stop()
			if err != nil {
				return nil, transient(err, 0)
			}
			o.waited = true
			return e.decide(ctx, later, o)
		}
		return e.inProgress(k)
	}
	if wait := k.NextAttemptIn; wait > 0 {
		// The last execution failed and scheduled the next attempt: a retry before then gets
		// the same answer and spends nothing.
		return nil, transient(errNotYetDue{k.LastError}, wait)
	}
	if !o.mayTakeOver {
		return e.inProgress(k)
	}
	sent := time.Now()
	taken, now, err := takeOverKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.c.cfg.Lease,
		&takeOverParams{ops: e.c.opNames, due: true, calls: e.c.calls})
	switch {
	case errors.Is(err, ErrKeyNotFound):
		// Deleted between the read and the takeover (retention GC): the client may retry.
		return nil, transient(errors.New("key vanished while being read; retry"), 0)
	case err != nil:
		return nil, transient(err, 0)
	case taken == nil:
		// Someone else took it over, or it finished meanwhile: answer from what is there now.
		return e.decide(ctx, now, decideOpts{waited: o.waited})
	}
	e.c.cfg.Logger.InfoContext(ctx, "taking over expired key", "operation", e.op.Name, "key", e.req.Key,
		"recovery_point", taken.RecoveryPoint, "attempt", taken.Attempts)
	e.traceTakeover(ctx, taken)
	return e.resume(ctx, taken, sent)
}

func (e *execution) inProgress(k *keyHead) (*Result, error) {
	return nil, &InProgressError{LeaseRemaining: k.LeaseLeft,
		RetryAfter: e.c.finish[e.op].left(k.RecoveryPoint, k.SinceWrite, k.LeaseLeft)}
}

// answerExisting answers from the key as it is now, after this execution found it claimed by
// another (a lost race for the claim, or a retry of an operation whose first phase claims
// without reading first) or lost its lease.
func (e *execution) answerExisting(ctx context.Context, mayTakeOver bool) (*Result, error) {
	found, err := readHead(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.keyHead())
	switch {
	case err != nil:
		return nil, transient(err, 0)
	case !found:
		// Deleted between the conflict and this read (retention GC): the client may retry.
		return nil, transient(errors.New("key vanished while being read; retry"), 0)
	}
	return e.decide(ctx, e.head, decideOpts{mayTakeOver: mayTakeOver})
}

// callerBound is ctx, ended when the caller's context ends: for the wait of a duplicate for the
// execution in flight, which the caller's deadline bounds. Everything else an execution does is
// detached from the caller: one statement at a time, each bounded, and its writes must not be
// cut between a call and the phase that records it.
func (e *execution) callerBound(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.caller == nil || e.caller.Done() == nil {
		return ctx, func() {}
	}
	bound, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(e.caller, func() { cancel(e.caller.Err()) })
	return bound, func() { stop(); cancel(nil) }
}

// errNotYetDue is a retry that came before the key's next attempt.
type errNotYetDue struct{ lastError string }

func (e errNotYetDue) Error() string {
	if e.lastError == "" {
		return "the next attempt is not due yet"
	}
	return "the next attempt is not due yet; the last one failed: " + e.lastError
}
