package gateway

import (
	"errors"
	"fmt"
	"net"

	"github.com/pgsaga/pgsaga/phases"
)

// notDoneError is a failure after which the provider certainly did not act (see NotDone).
type notDoneError struct{ err error }

func (e *notDoneError) Error() string   { return "gateway: certainly not done: " + e.err.Error() }
func (e *notDoneError) Unwrap() error   { return e.err }
func (e *notDoneError) Retryable() bool { return true }

// NotDone wraps a failure after which the provider certainly did not act: no connection could
// be opened, the request was never sent, or the provider answered explicitly that it did not
// process it. Sending the request again is safe: phases.IsRetryable reports true, and Classify
// failed_before.
func NotDone(err error) error { return &notDoneError{err: err} }

// unknownError is a failure after which the provider may or may not have acted (see Unknown).
type unknownError struct{ err error }

func (e *unknownError) Error() string   { return "gateway: outcome unknown: " + e.err.Error() }
func (e *unknownError) Unwrap() error   { return e.err }
func (e *unknownError) Retryable() bool { return true }

// Unknown wraps a failure after which the provider may or may not have acted: a timeout, a
// connection lost after sending, a 5xx that guarantees nothing, an answer that cannot be read.
// phases.IsRetryable reports true and Classify unknown: the engine keeps the key and resolves
// the call later, by inquiry or by re-sending the same key, never by guessing.
//
// A request the provider refused as invalid without acting on it (a validation 4xx) is
// phases.Permanent: sending it again cannot help, so the engine compensates the earlier phases
// and parks the key.
func Unknown(err error) error { return &unknownError{err: err} }

// ErrCannotResolve means an earlier attempt may have acted and nothing can tell whether it did.
// It satisfies phases.IsOutcomeUnknown: the engine parks the key for an operator and
// compensates nothing (money may have moved, a message may have gone out). The error wrapping
// it says why:
//
//   - the provider supports neither inquiry nor idempotency keys, or a pending effect can be
//     read back neither by id nor by reference;
//   - the provider cannot be asked and the idempotency key is older than its key retention
//     window: re-sending it could act twice;
//   - the provider holds a record for the reference that is not the intent's effect (a charge
//     of another amount or currency; see Kind.Match), which is never taken as the intent's;
//   - the effect stayed pending past ExecuteOpts.PendingWindow.
var ErrCannotResolve error = phases.OutcomeUnknown(errors.New("gateway: an earlier attempt may have acted and nothing can tell whether it did"))

// The reasons ErrCannotResolve is returned for.
var (
	errNoResolution   = fmt.Errorf("%w: the provider has neither inquiry nor idempotency keys", ErrCannotResolve)
	errKeyExpired     = fmt.Errorf("%w: the idempotency key is older than the provider's key retention window", ErrCannotResolve)
	errMismatch       = fmt.Errorf("%w: the provider's record does not match the intent", ErrCannotResolve)
	errPendingTooLong = fmt.Errorf("%w: the effect is still pending past its settle window", ErrCannotResolve)
)

// ErrPending means the effect was made and the provider has not decided it yet. Execute
// returns it wrapped in phases.RetryAfter (transient): the effect is never sent again, only
// read back until it is final.
var ErrPending = errors.New("gateway: the effect is pending at the provider")

// ErrInFlight means an earlier attempt may have reached the provider and may still land: an
// empty inquiry proves nothing until Capabilities.MaxInFlight has passed since every earlier
// attempt went quiet. Execute returns it wrapped in phases.RetryAfter with the time left.
var ErrInFlight = errors.New("gateway: an earlier attempt may still land; an empty inquiry proves nothing yet")

// Classify tells what an attempt that failed with err came to, by behaviour:
//
//   - an error that says its outcome is unknown (Unknown, phases.IsOutcomeUnknown): unknown; an
//     error wrapping ErrPending: pending;
//   - NotDone, or any error whose Retryable method reports false (phases.Permanent): the
//     provider certainly did not act, failed_before;
//   - any other error: unknown. When in doubt, the provider may have acted.
//
// Kind.Classify classifies an attempt's result and error together.
func Classify(err error) phases.CallOutcome {
	var unknown *unknownError
	if errors.As(err, &unknown) || phases.IsOutcomeUnknown(err) {
		return phases.CallOutcomeUnknown
	}
	if errors.Is(err, ErrPending) {
		return phases.CallOutcomePending
	}
	var notDone *notDoneError
	if errors.As(err, &notDone) {
		return phases.CallOutcomeFailedBefore
	}
	var behaviour interface{ Retryable() bool }
	if errors.As(err, &behaviour) && !behaviour.Retryable() {
		return phases.CallOutcomeFailedBefore
	}
	return phases.CallOutcomeUnknown
}

// TransportError classifies a failure to get any answer from a provider, for adapters: when no
// connection could be opened (refused, unreachable, unresolvable host) the request was
// certainly not sent, NotDone; any other failure (timeout, reset or closed connection,
// cancellation after dialling) may have followed the provider acting on it, Unknown.
func TransportError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return NotDone(err)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return NotDone(err)
	}
	return Unknown(err)
}
