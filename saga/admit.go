package saga

import (
	"context"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

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
func (c *Client) Run(ctx context.Context, operation string, req *Request) (*Result, error) {
	res, err := c.run(ctx, operation, req)
	return c.observed(operation, res, err)
}

func (c *Client) run(ctx context.Context, operation string, req *Request) (*Result, error) {
	op, hash, err := c.prepare(operation, req)
	if err != nil {
		return nil, err
	}
	e := c.newExecution(op, req, hash)
	e.caller = ctx
	ctx = e.traceRequest(context.WithoutCancel(ctx))
	if op.Validate != nil {
		if verr := op.Validate(req.Body); verr != nil {
			return e.traced(e.refuseInvalid(ctx, c.cfg.DB, verr, true))
		}
	}
	return e.traced(e.admit(ctx))
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

// admit answers a retry (replay, 422, 409, parked, not yet due, takeover) from one read of the
// key, with no transaction, and runs a new key's steps. The read goes alone, before the first
// phase, unless the operation's first phase is one that sends no statement (learned by running
// it): then a new key is claimed at once, in one round trip for the phase, and a retry is
// answered from a read after its claim finds the key stored (two round trips).
func (e *execution) admit(ctx context.Context) (*Result, error) {
	if runstate.Step(e.op.Steps[0]).Atomic() != nil && e.c.quietFirst(e.op) {
		return e.execute(ctx, 0)
	}
	found, err := readHead(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.keyHead())
	switch {
	case err != nil:
		return nil, transient(err, 0)
	case found:
		return e.decide(ctx, e.head, true)
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
	return e.decide(ctx, e.head, mayTakeOver)
}
