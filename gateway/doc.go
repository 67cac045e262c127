// Package gateway is the boundary between pgsaga and payment providers: the Gateway
// interface every adapter implements, the classification of a charge attempt, and Execute,
// the helper the saga engine uses to make one charge exactly once.
//
// Guarantees:
//
//   - Retry: a charge is always sent with a key derived from stored data (DeriveKey), so every
//     attempt for the same payment, in this process or after a crash, carries the same key.
//   - Crash and resume: when an earlier attempt may have reached the provider, Execute asks
//     the provider by reference first (when it supports inquiry) and returns what it finds
//     without charging. Without inquiry it re-sends the same key only while the provider
//     still remembers it (Capabilities.KeyRetention); an older key is refused with
//     ErrKeyExpired, and a provider with neither feature with ErrCannotResolve: both are
//     permanent and must be parked for an operator, never guessed.
//   - Ambiguity: a timeout or lost response is never taken as success or failure. Execute
//     resolves it by inquiry or by re-sending the same key; when it cannot, it returns an
//     AmbiguousError, so the caller keeps the key started and resolves it on resume.
//   - Declines are results (a Charge with ChargeStatusDeclined), stored and replayed, never
//     errors.
//   - Cancel: every call honours its context. A cancelled call that may have reached the
//     provider is reported as ambiguous.
//
// Subpackages: sim is a stateful, fault-injecting provider (in-process and over HTTP),
// stripe an adapter on the Stripe API, and gatewaytest the conformance suite every adapter
// runs.
package gateway
