package saga

import (
	"errors"
	"fmt"
	"time"
)

// ErrKeyReused is returned when a key is sent again with a different method, path or body.
// Nothing is stored; the client has a bug and should not be "helped".
var ErrKeyReused = errors.New("this Idempotency-Key was already used for a different request")

// KeyExpiredError means the key was used, and its record was deleted by retention; what
// retention left of it (a tombstone) says this request is the one it answered. Nothing runs
// again and nothing is stored: the client's intent was carried out once, and its answer is gone.
// Answered 410 idempotency_key_expired, which a client must not retry.
type KeyExpiredError struct {
	// CompletedAt is when the key's operation completed, on the database clock.
	CompletedAt time.Time
}

// The messages of the errors that carry data, which their answers repeat.
const (
	msgKeyExpired = "this Idempotency-Key was used for this request, and its record has expired"
	msgInProgress = "a request with this Idempotency-Key is still in progress"
	msgParked     = "this request is parked and waits for an operator"
)

func (e *KeyExpiredError) Error() string {
	return fmt.Sprintf("%s (it completed at %s)", msgKeyExpired, e.CompletedAt.UTC().Format(time.RFC3339))
}

// ErrKeyNotFound is returned when there is no such key in the scope.
var ErrKeyNotFound = errors.New("no such idempotency key")

// ErrLeaseLost is returned by a resume whose lease another execution took over meanwhile
// (fencing): this execution's writes since were rolled back, and the other one carries on.
var ErrLeaseLost = errors.New("the key's lease was taken over by another process")

// RefusedError is a call that the key's state or this client's operations refused: nothing ran
// and nothing was written. Reason says why. Match one reason with errors.Is:
//
//	errors.Is(err, &saga.RefusedError{Reason: saga.RefusedNotParked})
type RefusedError struct {
	Reason RefusedReason
	// Err is what the settle hook answered, for RefusedBySettleHook; nil otherwise.
	Err error
	// detail says more, for people: the key's status, the operation's name.
	detail string
}

// RefusedReason is why a call was refused.
type RefusedReason string

const (
	// RefusedUnknownOperation: the operation (the one named, or a stored key's) is not
	// registered with this client. Run, Handler, Resume and Settle refuse it.
	RefusedUnknownOperation RefusedReason = "unknown_operation"
	// RefusedNotDue: Resume with ResumeOpts.Due of a key that is not due for an execution (its
	// lease is live, its next attempt time has not come, or it is not started).
	RefusedNotDue RefusedReason = "not_due"
	// RefusedNotParked: Settle of a key that is not parked. Only a parked key can be settled.
	RefusedNotParked RefusedReason = "not_parked"
	// RefusedNoSettleHook: Settle of a key whose operation declares no settle hook.
	RefusedNoSettleHook RefusedReason = "no_settle_hook"
	// RefusedBySettleHook: the operation's settle hook refused the decision (a missing provider
	// reference, an outcome it cannot record); Err is what it answered.
	RefusedBySettleHook RefusedReason = "settle_refused"
)

func (e *RefusedError) Error() string {
	var msg string
	switch e.Reason {
	case RefusedUnknownOperation:
		msg = "operation is not registered with this client"
	case RefusedNotDue:
		msg = "the key is not due for an execution"
	case RefusedNotParked:
		msg = "the key is not parked: only a parked key can be settled"
	case RefusedNoSettleHook:
		msg = "the key's operation has no settle hook"
	case RefusedBySettleHook:
		msg = "the settlement was refused"
	default:
		msg = "refused: " + string(e.Reason)
	}
	if e.detail != "" {
		msg += " (" + e.detail + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Is reports whether target is a *RefusedError of the same Reason, or of any reason when the
// target's is empty.
func (e *RefusedError) Is(target error) bool {
	t, ok := target.(*RefusedError)
	return ok && t != nil && (t.Reason == "" || t.Reason == e.Reason)
}

// InProgressError means another execution holds the key's lease, for the time it says.
type InProgressError struct {
	// LeaseRemaining is how long the execution in flight still holds the key; if it died, a
	// retry after that takes the key over.
	LeaseRemaining time.Duration
	// RetryAfter estimates when the execution in flight will have finished: what is left of
	// its steps, from where it stands and how long this client's executions of the operation
	// took from there; never more than LeaseRemaining (all of it before the client measured
	// any). It is the Retry-After a 409 answers.
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%s (lease left %s)", msgInProgress, e.LeaseRemaining.Round(time.Millisecond))
}

// ParkedError means the key is parked for an operator, and answers so until an operator resumes
// or settles it; it says why.
type ParkedError struct {
	Reason ParkedReason
	// LastError is the failure that parked the key, for people.
	LastError string
}

func (e *ParkedError) Error() string {
	if e.LastError == "" {
		return fmt.Sprintf("%s (%s)", msgParked, e.Reason)
	}
	return fmt.Sprintf("%s (%s: %s)", msgParked, e.Reason, e.LastError)
}

// InvalidRequestError is a request the operation or the database refused as invalid (its
// validation failed, or its data cannot be stored: a string with NUL, a value a CHECK refuses),
// or KeyListParams that KeyList refuses (a Cursor no listing returned, a Limit out of range).
// Nothing is stored.
type InvalidRequestError struct{ Err error }

func (e *InvalidRequestError) Error() string { return e.Err.Error() }
func (e *InvalidRequestError) Unwrap() error { return e.Err }

// TransientError is a failure that a retry may fix (a gateway or database outage, a pending
// call). Nothing is stored: the key stays started (or unclaimed) and a retry or the worker
// continues it.
type TransientError struct {
	Err error
	// RetryAfter is when the key's next attempt is due: a retry sooner answers the same error
	// without spending an attempt. At least one second.
	RetryAfter time.Duration
}

func (e *TransientError) Error() string   { return "temporarily unavailable: " + e.Err.Error() }
func (e *TransientError) Unwrap() error   { return e.Err }
func (e *TransientError) Retryable() bool { return true }

// transient wraps err with a retry hint of at least a second.
func transient(err error, after time.Duration) *TransientError {
	return &TransientError{Err: err, RetryAfter: max(after, time.Second)}
}

// errDuplicate means the key turned out to exist already: the execution wrote nothing and the
// request must be answered from the stored key.
var errDuplicate = errors.New("key already claimed")
