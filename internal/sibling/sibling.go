// Package sibling is what package saga gives pgsaga's own packages (the worker, reconciliation)
// and no application: the Token that unlocks saga.Client.Internal, and the data its operations
// answer with. An internal package's types cannot be named outside this module, so no other
// module can call saga.Client.Internal.
package sibling

// Token is the argument of saga.Client.Internal.
type Token struct{}

// KeyRef names one key, for the worker's resume jobs.
type KeyRef struct{ Tenant, Actor, Key string }

// KeyEstimate is a cheap count for metrics: started, parked and stuck keys exactly (they are
// few and indexed), completed keys estimated from the planner's statistics.
type KeyEstimate struct {
	Started, Parked, Stuck int
	// CompletedEstimate is the table's estimated rows minus the started and parked ones.
	CompletedEstimate int
}

// CallReference is one key that journaled calls under a downstream reference: the key, where
// it stands, and the provider ids its attempts under that reference recorded.
type CallReference struct {
	// Reference is the downstream reference the provider saw.
	Reference string
	// Tenant, Actor and Key name the key.
	Tenant, Actor, Key string
	// Status is where the key stands (saga.KeyStatus).
	Status string
	// ProviderIDs are the provider's ids (charge ids) the key's attempts under the reference
	// recorded, sorted; empty when none recorded one (an attempt whose outcome is unknown, a
	// call step that records no id).
	ProviderIDs []string
}
