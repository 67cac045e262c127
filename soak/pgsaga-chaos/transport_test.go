package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLongestGap: the outage a failover caused is the longest time between two new 201s that
// overlaps it; replays and other answers do not end it.
func TestLongestGap(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	created := func(s float64) request { return request{at: at(s), status: http.StatusCreated} }
	tr := &transport{byScope: map[scope][]request{
		{Key: "a"}: {created(0), created(1), created(2)},
		{Key: "b"}: {{at: at(3), status: http.StatusServiceUnavailable}, {at: at(4), status: http.StatusCreated, replayed: true}, created(7.5)},
		{Key: "c"}: {created(8), created(20)},
	}}
	end := at(60)
	gap, ok := tr.longestGap(at(3), at(5), end) // the fault at 3s, a new primary at 5s
	require.True(t, ok)
	require.Equal(t, 5500*time.Millisecond, gap, "from the 201 at 2s to the one at 7.5s")
	gap, ok = tr.longestGap(at(9), at(10), end)
	require.True(t, ok)
	require.Equal(t, 12*time.Second, gap)
	_, ok = tr.longestGap(at(30), at(31), end)
	require.False(t, ok, "no 201 after the outage")
	_, ok = tr.longestGap(at(9), at(10), at(15))
	require.False(t, ok, "the 201 after the outage came after the run")
}
