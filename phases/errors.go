package phases

import (
	"errors"
	"fmt"
	"time"
)

// RejectError is a deterministic business outcome (not found, declined, exceeds balance). The
// engine stores it as the key's response and replays it; the phase that returned it commits
// nothing.
type RejectError struct {
	// Status is the HTTP status to answer, a 4xx.
	Status int
	// Code is the stable machine-readable code, such as "not_found".
	Code string
	// Message is for people.
	Message string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("rejected with %d %s: %s", e.Status, e.Code, e.Message)
}

// Retryable is false: a rejection is the answer, not a failure.
func (e *RejectError) Retryable() bool { return false }

// Reject returns a business outcome to store and replay.
func Reject(status int, code, message string) error {
	return &RejectError{Status: status, Code: code, Message: message}
}

// PermanentError is a failure that retrying cannot fix. The key is compensated and parked as
// failed for an operator.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string   { return "permanent failure: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error   { return e.Err }
func (e *PermanentError) Retryable() bool { return false }

// Permanent marks err as not worth retrying.
func Permanent(err error) error { return &PermanentError{Err: err} }

// RetryAfterError is a transient failure with a hint of when to try again.
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.After, e.Err)
}
func (e *RetryAfterError) Unwrap() error   { return e.Err }
func (e *RetryAfterError) Retryable() bool { return true }

// RetryAfter marks err as transient, to be tried again no sooner than after d.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{Err: err, After: d} }

// IsRetryable classifies a step's error by behaviour: errors that say Retryable() false (a
// rejection, a permanent failure, a gateway key past its window) are final; everything else is
// transient.
func IsRetryable(err error) bool {
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	return true
}
