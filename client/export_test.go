package client

// The headers of the protocol, for the external tests.
const (
	HeaderIdempotencyKey     = headerIdempotencyKey
	HeaderIdempotentReplayed = headerIdempotentReplayed
)
