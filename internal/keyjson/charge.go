package keyjson

import (
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// Charge is a provider's charge that no key accounts for, as `reconcile --json` renders it and
// the console's unmatched charges (which add when a reconciliation found it) render it.
type Charge struct {
	ProviderID string    `json:"provider_id"`
	Reference  string    `json:"reference"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
}

// FromCharge renders c as Charge.
func FromCharge(c gateway.Charge) Charge {
	return Charge{ProviderID: c.ID, Reference: c.Reference, Amount: c.Amount, Currency: c.Currency,
		Status: string(c.Status), CreatedAt: c.CreatedAt}
}
