package runstate

import "time"

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
	// Reference is the downstream key or reference the provider saw (phases.Step.WithReference).
	Reference string
	// StartedAt is when the attempt was journaled, just before it was sent.
	StartedAt time.Time
	// EndedAt is when its outcome was recorded; nil while it runs or when its execution died.
	EndedAt *time.Time
	// Deadline is the latest moment its execution could still send: the end of the lease it
	// ran under, as last renewed. The execution stopped sending a quarter of a lease before it.
	Deadline time.Time
	// MaxInFlight is the longest in-flight window the provider declared while the attempt sent
	// (phases.Run.DeclareInFlight): a request it sent may land that long after it went quiet.
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
