package phases

import (
	"errors"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

// CallOutcome is what one attempt of an external call came to, as the call journal records it.
// Each class has one consequence for the engine.
type CallOutcome = runstate.CallOutcome

const (
	// CallOutcomeSucceeded: the provider acted (the money moved). Recorded, and the operation
	// goes on.
	CallOutcomeSucceeded = runstate.CallOutcomeSucceeded
	// CallOutcomeDeclined: the provider refused, deterministically. A business outcome, stored
	// and replayed by the phase after the call.
	CallOutcomeDeclined = runstate.CallOutcomeDeclined
	// CallOutcomeFailedBefore: the provider certainly did not act (a refused connection, a
	// validation error, an explicit "not processed"). Safe to send again.
	CallOutcomeFailedBefore = runstate.CallOutcomeFailedBefore
	// CallOutcomePending: the provider accepted the request and has not decided. Never send it
	// again: wait for the final answer.
	CallOutcomePending = runstate.CallOutcomePending
	// CallOutcomeUnknown: the provider may or may not have acted (a timeout, a lost response, a
	// 5xx without a guarantee). Resolve it by the same key or by inquiry, never by guessing.
	CallOutcomeUnknown = runstate.CallOutcomeUnknown
)

// CallRecord is one attempt of an external call step, as the call journal holds it: its step,
// attempt, Reference, StartedAt, EndedAt (nil while it runs or when its execution died),
// Deadline (the end of the lease it ran under), MaxInFlight (the longest window declared by
// Run.DeclareInFlight while it sent), Outcome (empty when its execution died before recording
// one) and ProviderID. Its times are on this process's clock. MayHaveReached reports whether it
// may have reached the provider; QuietAt is when it certainly stopped sending.
type CallRecord = runstate.CallRecord

// outcomeUnknownError is a call whose effect may or may not have happened (see OutcomeUnknown).
type outcomeUnknownError struct{ err error }

func (e *outcomeUnknownError) Error() string { return "outcome unknown: " + e.err.Error() }
func (e *outcomeUnknownError) Unwrap() error { return e.err }

// Retryable is false: running the call again cannot resolve it.
func (e *outcomeUnknownError) Retryable() bool { return false }

// OutcomeUnknown reports true.
func (e *outcomeUnknownError) OutcomeUnknown() bool { return true }

// OutcomeUnknown marks err as a call whose effect may or may not have happened, with nothing
// left that can tell which (no inquiry and no idempotency keys, a downstream key past the
// provider's window, a charge pending past its settle window). The engine parks the key with
// reason outcome_unknown and runs no compensation: money may have moved, and only a person who
// looks at the provider can settle it.
func OutcomeUnknown(err error) error { return &outcomeUnknownError{err: err} }

// IsOutcomeUnknown reports whether err, or an error it wraps, says its effect may have
// happened and cannot be resolved: it has a method OutcomeUnknown() bool that reports true.
func IsOutcomeUnknown(err error) bool {
	var u interface{ OutcomeUnknown() bool }
	return errors.As(err, &u) && u.OutcomeUnknown()
}
