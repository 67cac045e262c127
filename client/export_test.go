package client

// The headers of the protocol, for the external tests.
const (
	HeaderIdempotencyKey     = headerIdempotencyKey
	HeaderIdempotentReplayed = headerIdempotentReplayed
)

// WithDefaults is Config.withDefaults, for the external tests.
func (c *Config) WithDefaults() *Config { return c.withDefaults() }
