package saga

import (
	"errors"
	"fmt"
	"time"
)

// ErrKeyReused is returned when a key is sent again with a different method, path or body.
// Nothing is stored; the client has a bug and should not be "helped".
var ErrKeyReused = errors.New("this Idempotency-Key was already used for a different request")

// ErrInProgress is matched by an *InProgressError: another execution holds the key's lease.
var ErrInProgress = errors.New("a request with this Idempotency-Key is still in progress")

// ErrParked is returned for a key parked as failed; it answers so until an operator resumes it.
var ErrParked = errors.New("this request failed permanently or ran out of attempts and waits for an operator")

// ErrKeyNotFound is returned when there is no such key in the scope.
var ErrKeyNotFound = errors.New("no such idempotency key")

// ErrLeaseLost is returned by a phase whose lease was taken over by another process (fencing):
// the phase's writes were rolled back.
var ErrLeaseLost = errors.New("the key's lease was taken over by another process")

// ErrUnknownOperation is returned when a stored key names an operation the client lacks.
var ErrUnknownOperation = errors.New("operation is not registered with this client")

// InProgressError is ErrInProgress with a hint of when to retry.
type InProgressError struct {
	// RetryAfter is when a retry is worth sending (the Retry-After header).
	RetryAfter time.Duration
	// LeaseRemaining is how long the execution in flight still holds the key; if it died, a
	// retry after that takes the key over.
	LeaseRemaining time.Duration
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%s (retry after %s)", ErrInProgress.Error(), e.RetryAfter.Round(time.Second))
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// InvalidRequestError is a request body that failed the operation's validation. Nothing is
// stored.
type InvalidRequestError struct{ Err error }

func (e *InvalidRequestError) Error() string { return e.Err.Error() }
func (e *InvalidRequestError) Unwrap() error { return e.Err }

// TransientError is a failure that a retry may fix (a gateway or database outage). Nothing is
// stored: the key stays started (or unclaimed) and a retry or the worker continues it.
type TransientError struct{ Err error }

func (e *TransientError) Error() string   { return "temporarily unavailable: " + e.Err.Error() }
func (e *TransientError) Unwrap() error   { return e.Err }
func (e *TransientError) Retryable() bool { return true }
