package phases

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SettleOutcome is an operator's decision about a parked key.
type SettleOutcome string

const (
	// SettleSucceeded: the effect happened (the operator saw the charge at the provider).
	SettleSucceeded SettleOutcome = "succeeded"
	// SettleFailed: the effect did not happen and will not.
	SettleFailed SettleOutcome = "failed"
)

// Settlement is an operator's decision, as a settle hook receives it.
type Settlement struct {
	// Outcome is what the operator decided.
	Outcome SettleOutcome
	// Note says why, for the key's history. Never empty.
	Note string
	// Reference is the provider's reference for what happened (a charge id), when given.
	Reference string
	// By is who decided (the operator's user name, or "console").
	By string
}

// SettleFunc finishes a parked key by an operator's decision, in one transaction with the
// key's saved values (Value.Get works as in the steps). It must call Run.Respond with the
// answer to store and replay. An error refuses the settlement: nothing is written.
type SettleFunc func(ctx context.Context, tx pgx.Tx, run *Run, s *Settlement) error
