package saga

import (
	"bytes"
	"context"
	"errors"
	"time"
)

// decide answers a request whose key is already stored: mismatch, replay, parked, in progress
// (or a bounded wait for it), not yet due, or a takeover of an expired lease followed by a
// resume. mayTakeOver is false where a takeover must not happen (RunTx, or after losing a race
// for the key): a key that could be taken over is then answered as in progress.
func (e *execution) decide(ctx context.Context, k *keyHead, mayTakeOver bool) (*Result, error) {
	if !e.op.Is(k.Operation) || k.Method != e.req.Method || k.Path != e.req.Path || !bytes.Equal(k.RequestHash, e.hash) {
		return nil, ErrKeyReused
	}
	switch k.Status {
	case KeyStatusCompleted:
		if e.held {
			// This request held the key and another execution finished it meanwhile: its
			// answer, not a replay.
			return &Result{Response: k.Response, Resumed: e.st != nil && e.st.Resumed()}, nil
		}
		return &Result{Response: k.Response, Replayed: true}, nil
	case KeyStatusFailed:
		return nil, &ParkedError{Reason: k.ParkedReason, LastError: k.LastError}
	}
	if k.LeaseLeft > 0 {
		if e.op.WaitInFlight > 0 && !e.waited {
			// The operation prefers an answer to a 409: wait, bounded, for the execution in
			// flight, then decide again on the key as it is then.
			e.waited = true
			waitCtx, stop := e.callerBound(ctx)
			later, err := e.c.waitForKey(waitCtx, e.req.Scope, e.req.Key, e.op.WaitInFlight)
			stop()
			if err != nil {
				return nil, transient(err, 0)
			}
			return e.decide(ctx, later, mayTakeOver)
		}
		return e.inProgress(k)
	}
	if wait := k.NextAttemptIn; wait > 0 {
		// The last execution failed and scheduled the next attempt: a retry before then gets
		// the same answer and spends nothing.
		return nil, transient(errNotYetDue{k.LastError}, wait)
	}
	if !mayTakeOver {
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
		return e.decide(ctx, now, false)
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
	return e.decide(ctx, e.head, mayTakeOver)
}

// errNotYetDue is a retry that came before the key's next attempt.
type errNotYetDue struct{ lastError string }

func (e errNotYetDue) Error() string {
	if e.lastError == "" {
		return "the next attempt is not due yet"
	}
	return "the next attempt is not due yet; the last one failed: " + e.lastError
}
