package phases

import (
	"errors"
	"time"
)

// CallOutcome is what one attempt of an external call came to, as the call journal records it.
// Each class has one consequence for the engine.
type CallOutcome string

const (
	// CallOutcomeSucceeded: the provider acted (the money moved). Recorded, and the operation
	// goes on.
	CallOutcomeSucceeded CallOutcome = "succeeded"
	// CallOutcomeDeclined: the provider refused, deterministically. A business outcome, stored
	// and replayed by the phase after the call.
	CallOutcomeDeclined CallOutcome = "declined"
	// CallOutcomeFailedBefore: the provider certainly did not act (a refused connection, a
	// validation error, an explicit "not processed"). Safe to send again.
	CallOutcomeFailedBefore CallOutcome = "failed_before"
	// CallOutcomePending: the provider accepted the request and has not decided. Never send it
	// again: wait for the final answer.
	CallOutcomePending CallOutcome = "pending"
	// CallOutcomeUnknown: the provider may or may not have acted (a timeout, a lost response, a
	// 5xx without a guarantee). Resolve it by the same key or by inquiry, never by guessing.
	CallOutcomeUnknown CallOutcome = "unknown"
)

// CallRecord is one attempt of an external call step, as the call journal holds it. Its times
// are on this process's clock: the engine converts the database's times once, when it reads the
// journal.
type CallRecord struct {
	// Step is the call step's name.
	Step string
	// Attempt is the key's execution that made the call (the key's attempt count then).
	Attempt int
	// Reference is the downstream key or reference the provider saw (Step.WithReference).
	Reference string
	// StartedAt is when the attempt was journaled, just before it was sent.
	StartedAt time.Time
	// EndedAt is when its outcome was recorded; nil while it runs or when its execution died.
	EndedAt *time.Time
	// Deadline is the latest moment its execution could still send: the end of the lease it
	// ran under, as last renewed. The execution stopped sending a quarter of a lease before it.
	Deadline time.Time
	// MaxInFlight is the longest in-flight window the provider declared while the attempt sent
	// (Run.DeclareInFlight): a request it sent may land that long after it went quiet.
	MaxInFlight time.Duration
	// Outcome is what it came to; empty while it runs or when its execution died before
	// recording it (then it may have reached the provider).
	Outcome CallOutcome
	// ProviderID is the provider's identifier for what it did (a charge id), when known.
	ProviderID string
}

// MayHaveReached reports whether the attempt may have reached the provider: every attempt
// except one recorded as certainly not done.
func (c CallRecord) MayHaveReached() bool { return c.Outcome != CallOutcomeFailedBefore }

// QuietAt is when the attempt certainly stopped sending: when its outcome was recorded, or, for
// an execution that died without recording one, the end of its lease.
func (c CallRecord) QuietAt() time.Time {
	if c.EndedAt != nil {
		return *c.EndedAt
	}
	return c.Deadline
}

// OutcomeUnknownError is a call whose effect may or may not have happened, with nothing left
// that can tell which (no inquiry and no idempotency keys, a downstream key past the provider's
// window, a charge pending past its settle window). The engine parks the key with reason
// outcome_unknown and runs no compensation: money may have moved, and only a person who looks
// at the provider can settle it.
type OutcomeUnknownError struct{ Err error }

func (e *OutcomeUnknownError) Error() string { return "outcome unknown: " + e.Err.Error() }
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Retryable is false: running the call again cannot resolve it.
func (e *OutcomeUnknownError) Retryable() bool { return false }

// OutcomeUnknown reports true.
func (e *OutcomeUnknownError) OutcomeUnknown() bool { return true }

// OutcomeUnknown marks err as an effect that may have happened and cannot be resolved.
func OutcomeUnknown(err error) error { return &OutcomeUnknownError{Err: err} }

// IsOutcomeUnknown reports whether err, or an error it wraps, says its effect may have
// happened and cannot be resolved: it has a method OutcomeUnknown() bool that reports true.
func IsOutcomeUnknown(err error) bool {
	var u interface{ OutcomeUnknown() bool }
	return errors.As(err, &u) && u.OutcomeUnknown()
}
