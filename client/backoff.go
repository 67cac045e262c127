package client

import (
	"math/rand/v2"
	"time"
)

// FullJitter is the retry delay with exponential growth and "full jitter": the delay after the
// attempt-th attempt (attempt from 1) is uniform in [0, min(maxDelay, base·2^(attempt-1))].
// Spreading each delay over the whole range, rather than around a centre, keeps many clients
// that failed together from retrying together. randInt64N returns a uniform value in [0, n) and
// must be safe for concurrent use; nil means math/rand/v2.Int64N.
//
// It has the shape of every retry delay in pgsaga (saga.Config.RetryDelay, the gateway's
// in-call retries): func(attempt int) time.Duration.
func FullJitter(base, maxDelay time.Duration, randInt64N func(n int64) int64) func(attempt int) time.Duration {
	if randInt64N == nil {
		randInt64N = rand.Int64N
	}
	return func(attempt int) time.Duration {
		return time.Duration(randInt64N(int64(ceiling(base, maxDelay, attempt-1)) + 1))
	}
}

// ceiling is min(maxDelay, base·2ⁿ), computed without overflowing.
func ceiling(base, maxDelay time.Duration, n int) time.Duration {
	c := base
	for i := 0; i < n && c < maxDelay; i++ {
		if c > maxDelay/2 {
			return maxDelay
		}
		c *= 2
	}
	return min(c, maxDelay)
}
