package saga

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/phases"
)

// ResumeOpts are optional settings for Resume.
type ResumeOpts struct {
	// Due resumes the key only when it is due (a started key whose lease expired and whose
	// next attempt time has come), as the worker does; otherwise Resume returns a *RefusedError
	// with RefusedNotDue.
	// Defaults to false: an operator's resume, which ignores the schedule and the attempt
	// budget.
	Due bool
	// Parked also resumes a parked key, with a fresh attempt budget (an operator's decision).
	// Defaults to false.
	Parked bool
	// By, when set, records the resume in the key's history as done by this operator.
	// Defaults to "" (not recorded).
	By string
}

// Resume continues a started key whose lease expired (or, with opts.Parked, a parked key) from
// its recovery point, through the remaining phases, and returns the final response. A completed
// key returns its stored response with Replayed set; a live lease an *InProgressError; a key
// this client has no operation for a *RefusedError (RefusedUnknownOperation). If another
// execution takes the key over while this one runs (this one was paused past its lease), it
// returns ErrLeaseLost.
func (c *Client) Resume(ctx context.Context, scope Scope, key string, opts *ResumeOpts) (*Result, error) {
	if opts == nil {
		opts = &ResumeOpts{}
	}
	ctx = context.WithoutCancel(ctx)
	sent := time.Now()
	// The takeover only touches keys of this client's operations: a key it cannot run keeps its
	// lease and its attempts.
	taken, k, err := takeOverKey(ctx, c.cfg.DB, scope, key, c.cfg.Lease,
		&takeOverParams{ops: c.opNames, due: opts.Due, parked: opts.Parked && !opts.Due, by: opts.By, calls: c.calls})
	if err != nil {
		return nil, err
	}
	if taken == nil {
		if _, err := c.operation(k.Operation); err != nil {
			return nil, err
		}
		switch {
		case k.Status == KeyStatusCompleted:
			return &Result{Response: k.Response, Replayed: true}, nil
		case opts.Due:
			return nil, &RefusedError{Reason: RefusedNotDue}
		case k.Status == KeyStatusParked:
			return nil, &ParkedError{Reason: k.ParkedReason, LastError: k.LastError}
		}
		return nil, &InProgressError{LeaseRemaining: k.LeaseLeft, RetryAfter: k.LeaseLeft}
	}
	op, err := c.operation(taken.Operation)
	if err != nil {
		return nil, err
	}
	by := byWorker
	if !opts.Due {
		by = byOperator
	}
	e := c.newResumption(op, taken.Key, by)
	e.operator = opts.By
	return e.resume(ctx, taken, sent)
}

// ResumeNextDue claims the key that has waited longest among those due for an execution (of
// this client's operations) and resumes it, returning its key and result. It returns no key and
// no error when none is due. Concurrent callers (in any process) claim different keys.
func (o *internalOps) ResumeNextDue(ctx context.Context) (*sibling.KeyRef, *Result, error) {
	c := o.c
	ctx = context.WithoutCancel(ctx)
	sent := time.Now()
	keys, err := claimDue(ctx, c.cfg.DB, c.opNames, c.calls, c.cfg.Lease, 1)
	if err != nil {
		return nil, nil, err
	}
	if len(keys) == 0 {
		return nil, nil, nil
	}
	k := keys[0]
	ref := &sibling.KeyRef{Tenant: k.Scope.Tenant, Actor: k.Scope.Actor, Key: k.Key.Key}
	op, err := c.operation(k.Operation)
	if err != nil {
		return ref, nil, err
	}
	res, err := c.newResumption(op, k.Key, byWorker).resume(ctx, k, sent)
	return ref, res, err
}

// ResumeDue resumes those of refs that are due for an execution, as Resume with ResumeOpts.Due
// does one key: their leases are taken in one statement (a key that another execution holds,
// that is not due yet, that finished or parked, or whose operation this client lacks is left
// alone), and every key taken is resumed at once, each on its own goroutine (its lease runs from
// the claim), and ResumeDue returns when all have returned: one result per ref, in
// order. It returns an error, having resumed nothing, only when the claim itself failed.
func (o *internalOps) ResumeDue(ctx context.Context, refs []sibling.KeyRef) ([]dueResult, error) {
	c := o.c
	ctx = context.WithoutCancel(ctx)
	out := make([]dueResult, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	sent := time.Now()
	taken, err := claimKeys(ctx, c.cfg.DB, c.opNames, c.calls, c.cfg.Lease, refs)
	if err != nil {
		return nil, err
	}
	at := make(map[sibling.KeyRef]int, len(refs))
	for i, r := range refs {
		at[r] = i
	}
	var wg sync.WaitGroup
	for _, t := range taken {
		i := at[sibling.KeyRef{Tenant: t.Scope.Tenant, Actor: t.Scope.Actor, Key: t.Key.Key}]
		out[i].Taken = true
		op, err := c.operation(t.Operation)
		if err != nil {
			out[i].Err = err // cannot be: the claim takes keys of this client's operations only
			continue
		}
		wg.Go(func() { out[i].Result, out[i].Err = c.newResumption(op, t.Key, byWorker).resume(ctx, t, sent) })
	}
	wg.Wait()
	return out, nil
}

// dueResult is what ResumeDue did with one key.
type dueResult struct {
	// Taken is false when the key was not due: nothing ran, and Result and Err are nil.
	Taken bool
	// Result and Err are what the key's resume returned, as Resume's.
	Result *Result
	Err    error
}

// ReserveDueTx hands up to limit due keys to the caller, in the caller's transaction (the one
// that enqueues their resume jobs), and returns them, the longest waiting first. A reserved key
// is not returned again for hold, so repeated sweeps do not list it while its job waits; if the
// job never runs, the key falls due again after hold. Reserving takes no lease and spends no
// attempt: Resume with ResumeOpts.Due does.
func (o *internalOps) ReserveDueTx(ctx context.Context, tx pgx.Tx, limit int, hold time.Duration) ([]sibling.KeyRef, error) {
	return reserveDue(ctx, tx, o.c.opNames, hold, limit)
}

// newResumption is an execution that continues key k, which the caller just took over.
func (c *Client) newResumption(op *phases.Operation, k *Key, by runner) *execution {
	req := &Request{Scope: k.Scope, Key: k.Key, Method: k.Method, Path: k.Path, Body: k.RequestBody}
	return c.newExecution(op, req, k.RequestHash, by)
}

// resume continues the key this execution just took over (its takeover sent at sent), in a
// pgsaga.resume span when tracing is on.
func (e *execution) resume(ctx context.Context, t *takenKey, sent time.Time) (*Result, error) {
	ctx, span := e.traceResume(ctx, t)
	res, err := e.resumeFrom(ctx, t, sent)
	if span != nil {
		endExecution(span, res, err)
	}
	return res, err
}

// resumeFrom checks the attempt budget and the key's age, then falls through the remaining
// phases from the key's recovery point, or on with the compensations under way.
func (e *execution) resumeFrom(ctx context.Context, t *takenKey, sent time.Time) (*Result, error) {
	k := t.Key
	e.stage, e.rp, e.committed = stageHolding, k.RecoveryPoint, k.State
	e.h = holder{scope: k.Scope, key: k.Key, token: t.token, attempt: k.Attempts}
	e.spent = k.budgetSpent()
	e.leaseFrom(sent, deref(k.LockedUntil).Sub(k.DBNow))
	e.reach(k.RecoveryPoint)
	e.st = runstate.New(runstate.Params{
		Tenant: k.Scope.Tenant, Actor: k.Scope.Actor, Key: k.Key, Operation: k.Operation,
		Method: k.Method, Path: k.Path, Body: k.RequestBody, Resumed: true, Attempt: k.Attempts,
		CreatedAt: k.CreatedAt, Values: k.State,
	})
	e.c.observer.Resumed(e.op.Name)
	if err := e.journaledByTakeover(t); err != nil {
		e.done = &callDone{step: t.call.step, outcome: phases.CallOutcomeFailedBefore} // never sent
		return e.park(ctx, ParkedPermanent, err.Error())
	}

	if e.by != byOperator {
		// The claim counts attempts, so a key whose executions never return (a poison key that
		// kills its process) is parked here, like one that fails.
		if limit := e.c.maxAttempts(e.op); e.spent > limit {
			e.unsent()
			return e.park(ctx, ParkedAttemptsExhausted, fmt.Sprintf("attempts exhausted (%d of %d); last error: %s", e.spent-1, limit, k.LastError))
		}
		if age := k.DBNow.Sub(k.CreatedAt); age > e.c.maxAge(e.op) {
			e.unsent()
			return e.park(ctx, ParkedAttemptsExhausted, fmt.Sprintf("older than MaxAge (%s); last error: %s", e.c.maxAge(e.op), k.LastError))
		}
	}

	switch rp := k.RecoveryPoint; {
	case rp == phases.RecoveryPointCompensated:
		// Every compensation committed; only the final write is left (or it parked).
		out, err := e.decidedOutcome()
		if err != nil {
			return e.park(ctx, ParkedPermanent, err.Error())
		}
		return e.finishCompensated(ctx, out)
	case strings.HasPrefix(rp, phases.RecoveryPointCompensatePrefix):
		i := stepIndex(e.op, strings.TrimPrefix(rp, phases.RecoveryPointCompensatePrefix))
		if i < 0 {
			return e.park(ctx, ParkedPermanent, fmt.Sprintf("operation %q has no step to compensate at %q (renamed? keep the old name in WithAliases)", e.op.Name, rp))
		}
		out, err := e.decidedOutcome()
		if err != nil {
			return e.park(ctx, ParkedPermanent, err.Error())
		}
		return e.compensate(ctx, i, out)
	case rp == phases.RecoveryPointStarted:
		return e.execute(ctx, 0)
	default:
		i := stepIndex(e.op, rp)
		if i < 0 {
			return e.park(ctx, ParkedPermanent, fmt.Sprintf("operation %q has no step %q to resume after (renamed? keep the old name in WithAliases)", e.op.Name, rp))
		}
		return e.execute(ctx, i+1)
	}
}

// journaledByTakeover takes the call the takeover journaled (when the key's recovery point comes
// right before one) as this execution's next call, with what the journal says of the call's
// earlier attempts: the call then needs no write of its own before it is sent.
func (e *execution) journaledByTakeover(t *takenKey) error {
	if t.call == nil {
		return nil
	}
	i := stepIndex(e.op, t.call.step)
	if i < 0 {
		return fmt.Errorf("operation %q has no call %q", e.op.Name, t.call.step)
	}
	step := runstate.Step(e.op.Steps[i])
	t.call.aliases = step.Aliases()
	out := &written{leaseLeft: deref(t.LockedUntil).Sub(t.DBNow), dbNow: t.DBNow}
	prior, err := decodeCalls(t.prior, func(c *callJSON) bool {
		return step.Is(c.Step) && c.Attempt < t.Attempts
	})
	if err != nil {
		return err
	}
	out.prior = prior
	e.journaled = &journaledCall{start: t.call, written: out, at: time.Now()}
	return nil
}

// unsent records that the call the takeover journaled was never sent: the write that ends this
// execution marks its journal row so (failed_before), not as an attempt that may have reached
// the provider.
func (e *execution) unsent() {
	if j := e.journaled; j != nil {
		e.done = &callDone{step: j.start.step, outcome: phases.CallOutcomeFailedBefore}
		e.journaled = nil
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
