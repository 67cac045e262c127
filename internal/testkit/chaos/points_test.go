package chaos_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
)

func TestPoints(t *testing.T) {
	t.Parallel()
	p := chaos.NewPoints()
	ctx := t.Context()

	require.NoError(t, p.Hit(ctx, "a"), "a point not armed does nothing")
	require.False(t, crash.Run(func() { _ = p.Hit(ctx, "a") }))

	p.Crash("a")
	reachedAfter := false
	require.True(t, crash.Run(func() {
		_ = p.Hit(ctx, "a")
		reachedAfter = true
	}), "a crash ends the goroutine")
	require.False(t, reachedAfter)
	require.Equal(t, 3, p.Hits("a"))
	require.Empty(t, p.Pending())

	boom := errors.New("boom")
	p.Fail("b", boom)
	p.Crash("b")
	require.Equal(t, map[string]int{"b": 2}, p.Pending())
	require.ErrorIs(t, p.Hit(ctx, "b"), boom, "armings are used in order")
	require.True(t, crash.Run(func() { _ = p.Hit(ctx, "b") }))
	require.NoError(t, p.Hit(ctx, "b"))

	gate := p.Block("c")
	var err error
	g := crash.Start(func() { err = p.Hit(ctx, "c") })
	<-gate.Reached()
	select {
	case <-g.Done():
		t.Fatal("a blocked hit returned before its gate was released")
	default:
	}
	gate.ReleaseWith(boom)
	require.False(t, g.Wait())
	require.ErrorIs(t, err, boom)

	p.Block("d")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, p.Hit(cancelled, "d"), context.Canceled, "a blocked hit gives up when its context ends")

	gate = p.Freeze("e")
	g = crash.Start(func() { err = p.Hit(cancelled, "e") })
	<-gate.Reached()
	select {
	case <-g.Done():
		t.Fatal("a frozen hit returned before its gate was released, although its context had ended")
	default:
	}
	gate.Release()
	require.False(t, g.Wait())
	require.NoError(t, err)
}
