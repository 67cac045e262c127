package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Capabilities is what a payment provider supports. The engine reads it to decide how a call
// that may already have reached the provider is resolved on resume.
type Capabilities struct {
	// IdempotencyKeys is true when the provider de-duplicates charges sent with the same key.
	IdempotencyKeys bool
	// Inquiry is true when the provider can be asked what happened to a reference, and its
	// answer is authoritative: a charge it does not list was never made.
	Inquiry bool
	// KeyRetention is how long the provider remembers an idempotency key. Zero means forever
	// (or unknown and assumed long enough). A key older than this is never re-sent.
	KeyRetention time.Duration
}

// ChargeParams is one charge request.
type ChargeParams struct {
	// Amount in minor units (cents), > 0.
	Amount int64
	// Currency is an ISO 4217 code such as "USD".
	Currency string
	// Reference identifies the charge on our side (e.g. "payment:<id>"); inquiry looks it up.
	Reference string
	// IdempotencyKey is the derived downstream key (see DeriveKey). Adapters send it when the
	// provider supports keys and ignore it otherwise.
	IdempotencyKey string
}

// ChargeStatus is the provider's verdict on a charge.
type ChargeStatus string

const (
	// ChargeStatusSucceeded: the money moved.
	ChargeStatusSucceeded ChargeStatus = "succeeded"
	// ChargeStatusDeclined: the provider refused; deterministic, stored and replayed.
	ChargeStatusDeclined ChargeStatus = "declined"
)

// Charge is a charge as the provider knows it.
type Charge struct {
	// ID is the provider's identifier for the charge.
	ID string `json:"id"`
	// Amount in minor units.
	Amount int64 `json:"amount"`
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
	// Reference is ChargeParams.Reference as the provider recorded it.
	Reference string `json:"reference"`
	// Status is the provider's verdict.
	Status ChargeStatus `json:"status"`
}

// Gateway is a payment provider adapter. Implementations are safe for concurrent use.
//
// Charge returns the charge the provider answered with (succeeded or declined) or an error
// classified by Classify: a retryable error means the provider certainly did not act; an
// ambiguous error means it may have (timeout, connection lost after sending); an error whose
// Retryable method reports false (see PermanentError) means the request itself is wrong and
// sending it again cannot help. A decline is a result, never an error.
//
// Inquire returns every charge the provider holds for a reference (possibly none); it returns
// an error wrapping ErrUnsupported when Capabilities().Inquiry is false.
type Gateway interface {
	Capabilities() Capabilities
	Charge(ctx context.Context, params ChargeParams) (*Charge, error)
	Inquire(ctx context.Context, reference string) ([]Charge, error)
}

// ErrUnsupported is returned by an adapter asked for something its provider cannot do.
var ErrUnsupported = errors.New("gateway: operation not supported by this provider")

// Outcome is the classification of a charge attempt.
type Outcome string

const (
	// OutcomeSucceeded: the provider charged.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeDeclined: the provider refused; a deterministic result to store and replay.
	OutcomeDeclined Outcome = "declined"
	// OutcomeRetryable: the provider certainly did not act (5xx before processing, refused
	// connection). Safe to send again.
	OutcomeRetryable Outcome = "retryable"
	// OutcomeAmbiguous: the provider may have acted (timeout, lost response). Resolve by
	// retrying with the same key or by inquiry, never by guessing.
	OutcomeAmbiguous Outcome = "ambiguous"
	// OutcomePermanent: the request was refused as invalid (4xx other than a decline) or can
	// no longer be resolved safely; sending it again cannot help. Park it for an operator.
	OutcomePermanent Outcome = "permanent"
)

// RetryableError wraps a failure after which the provider certainly did not act.
type RetryableError struct{ Err error }

func (e *RetryableError) Error() string   { return fmt.Sprintf("gateway retryable: %v", e.Err) }
func (e *RetryableError) Unwrap() error   { return e.Err }
func (e *RetryableError) Retryable() bool { return true }

// AmbiguousError wraps a failure after which the provider may or may not have acted.
// Retryable reports true: the engine keeps the key and resolves it later by inquiry or by
// re-sending the same idempotency key.
type AmbiguousError struct{ Err error }

func (e *AmbiguousError) Error() string   { return fmt.Sprintf("gateway ambiguous: %v", e.Err) }
func (e *AmbiguousError) Unwrap() error   { return e.Err }
func (e *AmbiguousError) Retryable() bool { return true }

// PermanentError wraps a failure that sending the same request again cannot fix: the provider
// rejected it as invalid without acting on it.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string   { return fmt.Sprintf("gateway permanent: %v", e.Err) }
func (e *PermanentError) Unwrap() error   { return e.Err }
func (e *PermanentError) Retryable() bool { return false }

// Classify tells what a Charge result means. An error it cannot place (no RetryableError,
// AmbiguousError or Retryable() false in its chain) is ambiguous: when in doubt, assume the
// provider may have acted.
func Classify(charge *Charge, err error) Outcome {
	if err == nil {
		if charge == nil {
			return OutcomeAmbiguous
		}
		if charge.Status == ChargeStatusSucceeded {
			return OutcomeSucceeded
		}
		return OutcomeDeclined
	}
	var ambiguous *AmbiguousError
	if errors.As(err, &ambiguous) {
		return OutcomeAmbiguous
	}
	var retryable *RetryableError
	if errors.As(err, &retryable) {
		return OutcomeRetryable
	}
	var behaviour interface{ Retryable() bool }
	if errors.As(err, &behaviour) && !behaviour.Retryable() {
		return OutcomePermanent
	}
	return OutcomeAmbiguous
}
