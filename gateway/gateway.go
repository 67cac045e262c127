package gateway

import (
	"context"
	"errors"
	"time"
)

// Capabilities is what a payment provider supports. Execute reads it to decide how a call
// that may already have reached the provider is resolved.
type Capabilities struct {
	// IdempotencyKeys is true when the provider de-duplicates charges sent with the same key:
	// a repeated key answers the first charge and creates nothing. Defaults to false.
	IdempotencyKeys bool
	// Inquiry is true when the provider can be asked what it holds for a reference (Inquire),
	// and its answer is authoritative once every request that could still land has landed (see
	// MaxInFlight). Defaults to false.
	Inquiry bool
	// KeyRetention is how long the provider remembers an idempotency key. A key older than this
	// is never re-sent. Defaults to 0: forever (or unknown and assumed long enough).
	KeyRetention time.Duration
	// MaxInFlight is the longest a request that was sent may take to reach the provider and
	// act (a slow network, a queue in front of it): a caller that gave up on a request can see
	// it land that much later. An empty inquiry proves nothing before every earlier attempt
	// has been quiet this long. Defaults to 0: a request that got no answer has either acted
	// already or never will.
	//
	// Keep it well under a third of the engine's lease: Execute waits for an earlier attempt
	// to go quiet only while the wait fits in half of the call's time, and otherwise gives the
	// lease back (phases.RetryAfter), which spends one of the key's attempts. With a MaxInFlight
	// near the lease, every resolution costs an attempt, and a small MaxAttempts parks keys
	// that the next attempt would have resolved (saga/model/README.md, finding 3).
	MaxInFlight time.Duration
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
	// ChargeStatusSucceeded: the money moved. Final.
	ChargeStatusSucceeded ChargeStatus = "succeeded"
	// ChargeStatusDeclined: the provider refused; deterministic, stored and replayed. Final.
	ChargeStatusDeclined ChargeStatus = "declined"
	// ChargeStatusPending: the provider accepted the charge and has not decided yet. It is a
	// charge (sending another one is a double charge); Gateway.Get shows it turn final.
	ChargeStatusPending ChargeStatus = "pending"
)

// Final reports whether s is a verdict that will not change (succeeded or declined).
func (s ChargeStatus) Final() bool {
	return s == ChargeStatusSucceeded || s == ChargeStatusDeclined
}

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
	// Status is the provider's verdict, as it stands.
	Status ChargeStatus `json:"status"`
	// CreatedAt is when the provider created the charge, on its clock; zero when the adapter
	// does not know it.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// matches reports whether c is the charge p asked for: same amount, currency and reference.
func (c *Charge) matches(p ChargeParams) bool {
	return c.Amount == p.Amount && c.Currency == p.Currency && c.Reference == p.Reference
}

// Gateway is a payment provider adapter. Implementations are safe for concurrent use, and
// classify every failure by behaviour (see Classify): an error whose provider certainly did not
// act is a NotDoneError (or a PermanentError when sending it again cannot help); one whose
// provider may have acted is an UnknownError. An error they cannot place is taken as unknown.
//
// Charge sends one charge and returns the charge the provider answered with: succeeded,
// declined or pending. A decline is a result, never an error. It never re-sends on its own.
//
// Inquire returns every charge the provider holds for a reference (possibly none), each as it
// stands; it returns an error wrapping ErrUnsupported when Capabilities().Inquiry is false.
//
// Get returns the charge with the provider's id as it stands now (a pending one may have turned
// final); an error wrapping ErrNotFound when the provider has no such charge, or ErrUnsupported
// when it cannot be read back by id.
type Gateway interface {
	Capabilities() Capabilities
	Charge(ctx context.Context, params ChargeParams) (*Charge, error)
	Inquire(ctx context.Context, reference string) ([]Charge, error)
	Get(ctx context.Context, providerID string) (*Charge, error)
}

// ErrUnsupported is returned by an adapter asked for something its provider cannot do.
var ErrUnsupported = errors.New("gateway: operation not supported by this provider")

// ErrNotFound is returned by Get for an id the provider does not know.
var ErrNotFound = errors.New("gateway: no such charge")
