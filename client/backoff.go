package client

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// FullJitterBackOff is a [backoff.BackOff] with exponential growth and "full
// jitter": the n-th delay (n from 0) is uniform in [0, min(Cap, Base·2ⁿ)].
// Spreading each delay over the whole range, rather than around a centre,
// keeps many clients that failed together from retrying together.
//
// It is written out rather than built from [backoff.ExponentialBackOff]
// because that type randomizes around the interval: with RandomizationFactor
// 1 its delays are uniform in [0, 2·interval], twice the intended cap at the
// top, and its MaxElapsedTime reads the wall clock. This type never returns
// [backoff.Stop]; bound it with [backoff.WithMaxRetries] or a deadline.
//
// A FullJitterBackOff is not safe for concurrent use; make one per retry loop.
type FullJitterBackOff struct {
	// Base is the ceiling of the first delay. Must be > 0.
	Base time.Duration
	// Cap is the largest ceiling any delay can have. Must be >= Base.
	Cap time.Duration
	// RandInt64N returns a uniform value in [0, n). Defaults to
	// math/rand/v2.Int64N when nil.
	RandInt64N func(n int64) int64

	attempt int
}

var _ backoff.BackOff = (*FullJitterBackOff)(nil)

// NextBackOff returns the next delay and advances the exponent.
func (b *FullJitterBackOff) NextBackOff() time.Duration {
	ceiling := b.ceiling(b.attempt)
	b.attempt++
	randN := b.RandInt64N
	if randN == nil {
		randN = rand.Int64N
	}
	return time.Duration(randN(int64(ceiling) + 1))
}

// Reset starts the exponent over.
func (b *FullJitterBackOff) Reset() { b.attempt = 0 }

// ceiling is min(Cap, Base·2ⁿ), computed without overflowing.
func (b *FullJitterBackOff) ceiling(n int) time.Duration {
	c := b.Base
	for i := 0; i < n && c < b.Cap; i++ {
		if c > b.Cap/2 {
			return b.Cap
		}
		c *= 2
	}
	return min(c, b.Cap)
}
