package gateway

import (
	"context"
	"fmt"
	"time"
)

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
	Status Status `json:"status"`
	// CreatedAt is when the provider created the charge, on its clock; zero when the adapter
	// does not know it.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Gateway is a payment provider adapter: the Effect of charges, with the payment words. An
// adapter implements Gateway; Execute (or ExecuteEffect on ChargeEffect(gw)) drives it.
// Implementations are safe for concurrent use and classify every failure by behaviour, as an
// Effect does: an error whose provider certainly did not act is NotDone (or phases.Permanent
// when sending it again cannot help); one whose provider may have acted is Unknown. An error
// they cannot place is taken as unknown.
//
// Capabilities returns what the provider supports now, its per-request timeout among them.
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

// Charges is the kind of a payment Gateway's effects: a charge is found by its reference, sent
// with its idempotency key, and the intent's only when its amount, currency and reference are.
var Charges = &Kind[ChargeParams, Charge]{
	Name: "charge",
	Keys: func(p ChargeParams) (string, string) { return p.Reference, p.IdempotencyKey },
	Verdict: func(c *Charge) (string, Status) {
		return c.ID, c.Status
	},
	Match: func(p ChargeParams, c *Charge) error {
		if c.Amount == p.Amount && c.Currency == p.Currency && c.Reference == p.Reference {
			return nil
		}
		return fmt.Errorf("it is %d %s for %q, the intent %d %s for %q",
			c.Amount, c.Currency, c.Reference, p.Amount, p.Currency, p.Reference)
	},
	Recorded: func(p ChargeParams, id string, s Status) *Charge {
		return &Charge{ID: id, Amount: p.Amount, Currency: p.Currency, Reference: p.Reference, Status: s}
	},
}

// ChargeEffect returns gw as the Effect of its charges, for code written for any effect (the
// conformance suite, ExecuteEffect).
func ChargeEffect(gw Gateway) Effect[ChargeParams, Charge] { return chargeEffect{gw} }

// chargeEffect is a Gateway as an Effect: Send is Charge.
type chargeEffect struct{ Gateway }

func (chargeEffect) Kind() *Kind[ChargeParams, Charge] { return Charges }

func (g chargeEffect) Send(ctx context.Context, p ChargeParams) (*Charge, error) {
	return g.Charge(ctx, p)
}

// Execute makes one charge exactly once on gw: ExecuteEffect on ChargeEffect(gw). It returns the
// provider's final Charge, succeeded or declined (a decline is a result, not an error), or an
// error the engine acts on by behaviour (see ExecuteEffect).
func Execute(ctx context.Context, j Journal, gw Gateway, params ChargeParams, opts *ExecuteOpts) (*Charge, error) {
	return ExecuteEffect(ctx, j, ChargeEffect(gw), params, opts)
}
