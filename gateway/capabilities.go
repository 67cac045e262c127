package gateway

import "time"

// Capabilities is what a provider supports. Execute reads it to decide how a call that may
// already have reached the provider is resolved, and how long one request may take.
type Capabilities struct {
	// IdempotencyKeys is true when the provider de-duplicates requests sent with the same key:
	// a repeated key answers the first request and makes nothing. Defaults to false.
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
	// Keep it well under a third of the engine's lease: Execute waits for an earlier
	// attempt to go quiet only while the wait fits in half of the call's time, and otherwise
	// gives the lease back (phases.RetryAfter), which spends one of the key's attempts. With a
	// MaxInFlight near the lease, every resolution costs an attempt, and a small MaxAttempts
	// parks keys that the next attempt would have resolved (saga/model/README.md, finding 3).
	MaxInFlight time.Duration
	// RequestTimeout bounds each request Execute makes to the provider (a send, an
	// inquiry, a read back): a request without an answer by then is given up, as unknown when it
	// was a send, and the call goes on to its next round (an inquiry, the same key again) within
	// the time the engine gave it. Without it, one lost answer holds the call until the call's
	// own deadline, and the effect is resolved only by the key's next attempt. Keep it under
	// half of the engine's call timeout (saga.Config.CallTimeout, two thirds of the lease by
	// default), so that a request given up leaves time to resolve it. Every adapter states its
	// own. Defaults to 0: a request is bounded by the call's deadline alone.
	RequestTimeout time.Duration
}
