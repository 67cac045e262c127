package gateway

import (
	"math/rand/v2"
	"time"
)

// ExecuteOpts are the optional settings of one Execute call.
type ExecuteOpts struct {
	// MayHaveReached says an earlier attempt may have reached the provider, for a caller that
	// has no journal (a nil Journal) and resumes a call. With a journal, the prior calls say so
	// and the field only adds to them. Defaults to false.
	MayHaveReached bool
	// KeyCreatedAt is when the downstream key was first sent, compared with
	// Capabilities.KeyRetention before the key is re-sent; the start of the oldest prior call in
	// the journal is used when it is earlier. Defaults to that start, or to the zero time (no
	// check) when there is no prior call.
	KeyCreatedAt time.Time
	// PendingWindow is how long an effect may stay pending, counted from the first attempt that
	// found it pending, before the call gives up on it with ErrCannotResolve (an outcome nothing
	// can resolve: the engine parks the key). Defaults to 24h.
	PendingWindow time.Duration
	// Retries is how many more rounds the call makes in-process after the first one before it
	// leaves the call to the engine's next attempt; a round is a send, an inquiry or a read of a
	// pending effect. Defaults to 4; a negative value means none.
	Retries int
	// RetryDelay returns the pause before retry n (1 for the first). Defaults to 100ms doubling
	// up to 2s, each drawn uniformly from its upper half (jitter).
	RetryDelay func(n int) time.Duration
	// Now returns the current time, for key windows, pending windows and in-flight windows
	// (pauses and request timeouts themselves run on real timers). Defaults to time.Now.
	Now func() time.Time
}

func (o *ExecuteOpts) withDefaults() ExecuteOpts {
	var out ExecuteOpts
	if o != nil {
		out = *o
	}
	if out.PendingWindow == 0 {
		out.PendingWindow = 24 * time.Hour
	}
	switch {
	case out.Retries == 0:
		out.Retries = 4
	case out.Retries < 0:
		out.Retries = 0
	}
	if out.RetryDelay == nil {
		out.RetryDelay = defaultRetryDelay
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// defaultRetryDelay is ExecuteOpts.RetryDelay's default: 100ms doubling up to 2s for retry n
// (1-based), each drawn uniformly from its upper half so that callers retrying together spread
// out.
func defaultRetryDelay(n int) time.Duration {
	d := 2 * time.Second
	if n < 6 {
		d = min(d, 100*time.Millisecond<<max(n-1, 0))
	}
	return d/2 + rand.N(d/2+1)
}
