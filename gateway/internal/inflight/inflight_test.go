package inflight

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWindowCoversALongerHoldUntilItLands(t *testing.T) {
	t.Parallel()
	var w Window
	t0 := time.Now()
	w.Add(t0, t0.Add(time.Second))
	w.Add(t0.Add(100*time.Millisecond), t0.Add(300*time.Millisecond))

	require.Equal(t, time.Second, w.MaxInFlight(t0.Add(200*time.Millisecond), 200*time.Millisecond),
		"a request held 1s is still on its way")
	require.Equal(t, 5*time.Second, w.MaxInFlight(t0.Add(200*time.Millisecond), 5*time.Second),
		"the declared hold when it is longer")
	require.Equal(t, 200*time.Millisecond, w.MaxInFlight(t0.Add(time.Second), 200*time.Millisecond),
		"once every request landed, the declared hold")
	require.Empty(t, w.held, "landed requests are forgotten")
}

func TestWindowKeepsNoRequestThatLandsOnArrival(t *testing.T) {
	t.Parallel()
	var w Window
	t0 := time.Now()
	w.Add(t0, t0)
	require.Empty(t, w.held)
	require.Zero(t, w.MaxInFlight(t0, 0))
}
