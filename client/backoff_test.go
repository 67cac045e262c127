package client_test

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
)

func TestFullJitterCeilingDoublesUpToCap(t *testing.T) {
	t.Parallel()
	top := func(n int64) int64 { return n - 1 } // always the top of the range
	b := &client.FullJitterBackOff{Base: 100 * time.Millisecond, Cap: time.Second, RandInt64N: top}

	var got []time.Duration
	for range 7 {
		got = append(got, b.NextBackOff())
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}, got)

	b.Reset()
	require.Equal(t, 100*ms, b.NextBackOff())
}

func TestFullJitterNeverOverflows(t *testing.T) {
	t.Parallel()
	top := func(n int64) int64 { return n - 1 }
	b := &client.FullJitterBackOff{Base: time.Second, Cap: time.Duration(1<<63 - 1), RandInt64N: top}
	for range 200 {
		require.GreaterOrEqual(t, b.NextBackOff(), time.Duration(0))
	}
}

// TestFullJitterDistribution samples the real random source: every delay is
// within [0, ceiling], and the delays cover that whole range rather than
// bunching near the ceiling (as "equal jitter" or a fixed delay would).
func TestFullJitterDistribution(t *testing.T) {
	t.Parallel()
	const samples = 4000
	base, maxDelay := 100*time.Millisecond, 2*time.Second

	for attempt, ceiling := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, maxDelay, maxDelay} {
		var (
			sum      time.Duration
			low, hi  = ceiling, time.Duration(0)
			quarters [4]int
		)
		for range samples {
			b := &client.FullJitterBackOff{Base: base, Cap: maxDelay}
			var d time.Duration
			for range attempt + 1 {
				d = b.NextBackOff()
			}
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceiling)
			sum += d
			low, hi = min(low, d), max(hi, d)
			quarters[min(int(4*d/ceiling), 3)]++
		}
		mean := sum / samples
		require.InDelta(t, float64(ceiling)/2, float64(mean), float64(ceiling)*0.05, "attempt %d: mean of a uniform [0, cap] is cap/2", attempt)
		require.Less(t, low, ceiling/20, "attempt %d: some delays near 0", attempt)
		require.Greater(t, hi, ceiling*19/20, "attempt %d: some delays near the cap", attempt)
		for q, n := range quarters {
			require.InDelta(t, samples/4, n, samples/10, "attempt %d: quarter %d of the range holds about a quarter of the delays", attempt, q)
		}
	}
}

func TestFullJitterIsABackOff(t *testing.T) {
	t.Parallel()
	var b backoff.BackOff = backoff.WithMaxRetries(&client.FullJitterBackOff{Base: time.Millisecond, Cap: time.Millisecond}, 2)
	require.NotEqual(t, backoff.Stop, b.NextBackOff())
	require.NotEqual(t, backoff.Stop, b.NextBackOff())
	require.Equal(t, backoff.Stop, b.NextBackOff())
}
