package gateway

import (
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

// Gateway is a payment provider adapter: the Effect of charges. Send makes one charge and
// returns the charge the provider answered with, succeeded, declined or pending; Inquire
// returns every charge the provider holds for a reference; Get reads one back by the provider's
// id. Kind returns Charges. Effect says what each method must do, and Execute drives it.
type Gateway = Effect[ChargeParams, Charge]

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
