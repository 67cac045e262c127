package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// fail handles step i's error:
//   - a duplicate claim or a lost lease: answer from the key as it stands;
//   - a refusal of the database that every retry would meet (refusal.go): the client's data
//     (400 invalid_request, stored like a rejection once a phase committed, nothing stored
//     before), or a clash with committed data (409 conflict, stored);
//   - a rejection (a business outcome) or a permanent failure: compensate the committed phases,
//     then store the outcome or park (permanent);
//   - an outcome nothing can resolve (a call that may have had its effect): park at once,
//     compensating nothing (outcome_unknown);
//   - anything else: transient.
func (e *execution) fail(ctx context.Context, i int, err error) (*Result, error) {
	switch {
	case errors.Is(err, errDuplicate):
		return e.answerExisting(ctx, true)
	case errors.Is(err, ErrLeaseLost):
		return e.leaseLost(ctx)
	}
	if answer, stored := refusal(err); answer != nil {
		e.c.cfg.Logger.WarnContext(ctx, "request refused by the database", "operation", e.op.Name, "key", e.req.Key,
			"status", answer.Status, "error", err)
		if !e.persisted && !stored {
			return nil, &InvalidRequestError{Err: errors.New(answer.Message)}
		}
		err = answer
	}
	var reject *phases.RejectError
	switch {
	case errors.As(err, &reject):
		return e.compensate(ctx, i-1, &outcome{Response: rejectResponse(reject)})
	case phases.IsOutcomeUnknown(err) && e.persisted:
		return e.park(ctx, ParkedOutcomeUnknown, err.Error())
	case !phases.IsRetryable(err):
		e.c.cfg.Logger.ErrorContext(ctx, "operation failed permanently", "operation", e.op.Name, "key", e.req.Key, "error", err)
		return e.compensate(ctx, i-1, &outcome{Error: err.Error()})
	}
	return e.transient(ctx, err)
}

// rejectResponse is the stored answer of a business rejection.
func rejectResponse(r *phases.RejectError) *storedResponse {
	return &storedResponse{Status: r.Status, Header: map[string][]string{"Content-Type": {ContentTypeProblem}},
		Body: errorBody(r.Status, r.Code, r.Message)}
}

// transient handles a failure a retry may fix. A key this execution holds gets its lease back
// early with the next attempt scheduled in SQL (and the outcome of the call just made
// journaled), or is parked once its attempt budget is spent; a pending call spends no budget.
// Before its claim is known to have committed, the key is read back: not there, nothing was
// stored; stored by a duplicate, the request is answered as a retry; stored by this execution's
// own claim (the COMMIT's answer was lost), it is this request's answer, or its lease to give
// back.
func (e *execution) transient(ctx context.Context, err error) (*Result, error) {
	e.c.cfg.Logger.WarnContext(ctx, "transient failure", "operation", e.op.Name, "key", e.req.Key, "attempt", e.st.Attempt(), "error", err)
	if !e.persisted {
		found, lookErr := readHead(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.keyHead())
		if lookErr != nil || !found {
			return nil, transient(err, 0)
		}
		// The key is stored: by a duplicate, or by this execution's claim, whose COMMIT reached
		// the database while its answer was lost. A duplicate's key answers as a retry would.
		if !e.claimedByUs(ctx) {
			return e.decide(ctx, e.head, false)
		}
		e.held, e.persisted = true, true
		if e.head.Status != KeyStatusStarted {
			return e.decide(ctx, e.head, false) // finished by this request: its answer, no replay
		}
		// Started under this execution's lease (its first phase committed): give the lease back
		// now, as after any transient failure, rather than leave the key held until it runs out.
	}
	pending := e.done != nil && e.done.outcome == phases.CallOutcomePending
	if limit := e.c.maxAttempts(e.op); !pending && e.spent >= limit {
		return e.park(ctx, ParkedAttemptsExhausted, fmt.Sprintf("attempts exhausted (%d of %d): %v", e.spent, limit, err))
	}
	delay := e.c.cfg.RetryDelay(e.spent)
	var after *phases.RetryAfterError
	if errors.As(err, &after) {
		delay = after.After
	}
	w := &keyWrite{kind: writeRelease, status: KeyStatusStarted, recoveryPoint: e.rp, state: e.committed,
		lastError: err.Error(), retryIn: delay, unspent: pending, done: e.done}
	if _, _, werr := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w); errors.Is(werr, ErrLeaseLost) {
		return e.leaseLost(ctx)
	} else if werr != nil {
		e.c.cfg.Logger.WarnContext(ctx, "could not release the lease early; it expires on its own", "operation", e.op.Name, "key", e.req.Key, "error", werr)
		delay = max(delay, time.Until(e.leaseEnd))
	}
	e.done = nil
	e.traceRetry(ctx, delay, err)
	return nil, transient(err, delay)
}

// claimedByUs reports whether the stored key (e.head) is the one this execution's claim wrote,
// under its token. If the question fails, it is not: the key is answered as a duplicate's.
func (e *execution) claimedByUs(ctx context.Context) bool {
	if !e.h.token.Valid || (e.head.Status != KeyStatusStarted && e.head.Status != KeyStatusCompleted) {
		return false
	}
	ours, err := keyWrittenBy(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, &e.h.token)
	return err == nil && ours
}

// leaseLost stops an execution whose lease another took over (a zombie): it writes nothing more.
// A request is answered from the key as it is now: the stored response once the other execution
// finished (not as a replay: this request held the key), in progress while it runs, parked if it
// parked the key. A resume reports ErrLeaseLost.
func (e *execution) leaseLost(ctx context.Context) (*Result, error) {
	e.c.cfg.Logger.WarnContext(ctx, "lease taken over by another execution; this one stops", "operation", e.op.Name, "key", e.req.Key)
	if e.resumer {
		return nil, ErrLeaseLost
	}
	return e.answerExisting(ctx, false)
}

// park marks the key failed for an operator, keeping its recovery point and committed values.
func (e *execution) park(ctx context.Context, reason ParkedReason, msg string) (*Result, error) {
	w := &keyWrite{kind: writePark, status: KeyStatusFailed, recoveryPoint: e.rp, state: e.committed, lastError: msg,
		reason: reason, done: e.done}
	if _, _, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return e.leaseLost(ctx)
		}
		return nil, transient(fmt.Errorf("error parking key (%s): %w", msg, err), time.Until(e.leaseEnd))
	}
	e.done = nil
	e.traceParked(ctx, reason, msg)
	e.c.cfg.Logger.ErrorContext(ctx, "key parked", "operation", e.op.Name, "key", e.req.Key, "reason", reason, "error", msg)
	e.c.observer.Parked(e.op.Name, reason)
	return nil, &ParkedError{Reason: reason, LastError: msg}
}

// errorBody is the body of every error pgsaga answers or stores: the problem details of
// ProblemBody, without extension members of the caller's.
func errorBody(status int, code, message string) []byte {
	return ProblemBody(status, code, message, nil)
}
