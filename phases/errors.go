package phases

import (
	"errors"
	"fmt"
	"time"
)

// A step's error says what the engine does next by its behaviour, not by its type: Reject,
// Permanent, RetryAfter and OutcomeUnknown make errors with these behaviours, and IsRetryable
// and IsOutcomeUnknown read them back, through any wrapping.

// rejectError is a deterministic business outcome (see Reject).
type rejectError struct {
	status        int
	code, message string
}

func (e *rejectError) Error() string {
	return fmt.Sprintf("rejected with %d %s: %s", e.status, e.code, e.message)
}

// Retryable is false: a rejection is the answer, not a failure.
func (e *rejectError) Retryable() bool { return false }

// Rejection is the answer to store: the HTTP status, the stable code and the message.
func (e *rejectError) Rejection() (status int, code, message string) {
	return e.status, e.code, e.message
}

// Reject returns a deterministic business outcome (not found, declined, exceeds balance): the
// engine stores it as the key's response, a 4xx status with a stable machine-readable code
// such as "not_found" and a message for people, and replays it; the phase that returned it
// commits nothing.
func Reject(status int, code, message string) error {
	return &rejectError{status: status, code: code, message: message}
}

// permanentError is a failure that retrying cannot fix (see Permanent).
type permanentError struct{ err error }

func (e *permanentError) Error() string   { return "permanent failure: " + e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Retryable() bool { return false }

// Permanent marks err as a failure that retrying cannot fix, such as a request the provider
// refused as invalid without acting on it. The engine compensates the earlier phases and parks
// the key for an operator.
func Permanent(err error) error { return &permanentError{err: err} }

// retryAfterError is a transient failure with a hint of when to try again (see RetryAfter).
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.after, e.err)
}
func (e *retryAfterError) Unwrap() error   { return e.err }
func (e *retryAfterError) Retryable() bool { return true }

// RetryDelay is how long to wait before trying again.
func (e *retryAfterError) RetryDelay() time.Duration { return e.after }

// RetryAfter marks err as transient, to be tried again no sooner than after d. RetryDelay reads
// d back.
func RetryAfter(d time.Duration, err error) error { return &retryAfterError{err: err, after: d} }

// RetryDelay is the delay RetryAfter gave err or an error it wraps, and false when none did.
func RetryDelay(err error) (time.Duration, bool) {
	var r interface{ RetryDelay() time.Duration }
	if errors.As(err, &r) {
		return r.RetryDelay(), true
	}
	return 0, false
}

// IsRetryable classifies a step's error by behaviour: errors that say Retryable() false (a
// rejection, a permanent failure, an outcome nothing can resolve) are final; everything else is
// transient.
func IsRetryable(err error) bool {
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return true
}
