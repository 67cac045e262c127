package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScriptedFaultsComeBeforeProbabilities(t *testing.T) {
	t.Parallel()
	d := New(1)
	d.FailNext, d.HangNext, d.LoseNext, d.PendingNext = 1, 1, 1, 1

	require.True(t, d.FailsBefore(0), "scripted")
	require.False(t, d.FailsBefore(0), "script spent, probability 0")
	require.True(t, d.Pending(0))
	require.False(t, d.Pending(0))
	require.Equal(t, Answer{Hang: true}, d.Answer(0, 0, 0), "a hang before a loss")
	require.Equal(t, Answer{Lose: true}, d.Answer(0, 0, 0))
	require.Equal(t, Answer{}, d.Answer(0, 0, 0))
	require.True(t, d.FailsBefore(1), "probability 1")
}

func TestHoldAndDelayStayWithinTheirJitter(t *testing.T) {
	t.Parallel()
	d := New(7)
	require.Zero(t, d.Hold(0, time.Second), "no hold without LatencyBefore, whatever the jitter")
	for range 100 {
		require.GreaterOrEqual(t, d.Hold(time.Second, 10*time.Millisecond), time.Second)
		require.LessOrEqual(t, d.Hold(time.Second, 10*time.Millisecond), time.Second+10*time.Millisecond)
		a := d.Answer(time.Millisecond, time.Millisecond, 0)
		require.GreaterOrEqual(t, a.Delay, time.Millisecond)
		require.LessOrEqual(t, a.Delay, 2*time.Millisecond)
	}
}

func TestTheSameSeedDrawsTheSameFaults(t *testing.T) {
	t.Parallel()
	a, b := New(42), New(42)
	for range 50 {
		require.Equal(t, a.FailsBefore(0.5), b.FailsBefore(0.5))
		require.Equal(t, a.Answer(0, time.Second, 0.5), b.Answer(0, time.Second, 0.5))
	}
}
