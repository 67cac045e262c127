package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
)

func TestFullJitterCeilingDoublesUpToCap(t *testing.T) {
	t.Parallel()
	top := func(n int64) int64 { return n - 1 } // always the top of the range
	delay := client.FullJitter(100*time.Millisecond, time.Second, top)

	var got []time.Duration
	for attempt := 1; attempt <= 7; attempt++ {
		got = append(got, delay(attempt))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}, got)
}

func TestFullJitterNeverOverflows(t *testing.T) {
	t.Parallel()
	top := func(n int64) int64 { return n - 1 }
	delay := client.FullJitter(time.Second, time.Duration(1<<63-1), top)
	for attempt := 1; attempt <= 200; attempt++ {
		require.GreaterOrEqual(t, delay(attempt), time.Duration(0))
	}
}

// TestFullJitterDistribution samples the real random source: every delay is
// within [0, ceiling], and the delays cover that whole range rather than
// bunching near the ceiling (as "equal jitter" or a fixed delay would).
func TestFullJitterDistribution(t *testing.T) {
	t.Parallel()
	const samples = 4000
	delay := client.FullJitter(100*time.Millisecond, 2*time.Second, nil)
	for i, ceiling := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
		attempt := i + 1
		var (
			sum      time.Duration
			low, hi  = ceiling, time.Duration(0)
			quarters [4]int
		)
		for range samples {
			d := delay(attempt)
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
