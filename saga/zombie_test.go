package saga_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/saga"
)

// TestZombieIsFenced pauses execution A at a point, lets its lease expire, has execution B (a
// second client, as another process) take the key over and finish, then lets A go on. A must
// commit nothing more and be told the key is someone else's; every effect stays single.
func TestZombieIsFenced(t *testing.T) {
	t.Parallel()
	for name, point := range map[string]string{
		// A's call acted; A wakes up and runs the next phase.
		"paused after a call": chaos.AfterStep(opFiveSteps, "notify"),
		// A is inside the next phase's transaction, before its writes.
		"paused before a phase's writes": chaos.BeforeStep(opFiveSteps, "confirm"),
		// A made its writes in the phase's transaction and has not yet advanced the key.
		"paused before a phase commits": chaos.AfterStep(opFiveSteps, "confirm"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, fiveSteps)
			key := "zombie-" + newID()
			gate := h.points.Block(point)
			var (
				resA *saga.Result
				errA error
			)
			a := crash.Start(func() { resA, errA = h.client.Run(t.Context(), opFiveSteps, h.req(key, `{}`)) })
			<-gate.Reached()
			h.expireLease(key)

			b := h.newClient(nil, fiveSteps)
			resB, err := b.Resume(t.Context(), h.scope, key, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, resB.Response.Status)
			require.True(t, resB.Resumed)

			gate.Release()
			require.False(t, a.Wait())
			// The fenced execution writes nothing more and answers from the key as the other
			// execution left it: the stored response — not as a replay, for this request held
			// the key (it is the request that started it).
			require.NoError(t, errA)
			require.False(t, resA.Replayed, "the request that started the key must not say it is a replay")
			require.Equal(t, resB.Response.Body, resA.Response.Body)

			for _, step := range []string{"reserve", "confirm", "finish"} {
				require.Equal(t, 1, h.effects(key, step), "effect of %s", step)
			}
			for _, step := range []string{"notify", "ship"} {
				require.True(t, h.ext.acted(key+"/"+step))
			}
			n, _ := h.ext.calls(key + "/ship")
			require.Equal(t, 1, n, "the zombie must not reach the second call")
			k := h.key(key)
			require.Equal(t, saga.KeyStatusCompleted, k.Status)
			require.Equal(t, resB.Response.Body, k.Response.Body)
		})
	}
}

// TestZombieTransientFailureIsNotUnavailable: a zombie whose call fails transiently after its
// key was taken over and completed must not answer "temporarily unavailable, retry" (503): the
// key is not its own anymore. Like a zombie fenced at a phase, it answers from the key as it is
// now: the stored response of the execution that completed it.
func TestZombieTransientFailureIsNotUnavailable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, fiveSteps)
	key := "zombie-transient-" + newID()
	gate := h.points.Block(chaos.BeforeStep(opFiveSteps, "notify"))
	var (
		resA *saga.Result
		errA error
	)
	a := crash.Start(func() { resA, errA = h.client.Run(t.Context(), opFiveSteps, h.req(key, `{}`)) })
	<-gate.Reached()
	h.expireLease(key)
	resB, err := h.newClient(nil, fiveSteps).Resume(t.Context(), h.scope, key, nil)
	require.NoError(t, err)

	gate.ReleaseWith(errors.New("gateway timed out"))
	require.False(t, a.Wait())
	require.Equal(t, saga.KeyStatusCompleted, h.key(key).Status, "the zombie's failure must not touch the key")
	require.NoError(t, errA, "a zombie must not answer 503 for a key another execution completed")
	require.False(t, resA.Replayed, "the request that started the key must not say it is a replay")
	require.Equal(t, resB.Response.Body, resA.Response.Body)
}

// TestZombieFencedWhileTheNewOwnerRuns: A wakes while B, which took the key over, is still in
// the middle of it (the key is still started). Only the lease token tells them apart: A's phase
// must not commit, and A must be told the key is in progress; B then finishes alone.
func TestZombieFencedWhileTheNewOwnerRuns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, fiveSteps)
	key := "zombie-concurrent-" + newID()
	gateA := h.points.Block(chaos.AfterStep(opFiveSteps, "notify"))
	var errA error
	a := crash.Start(func() { _, errA = h.client.Run(t.Context(), opFiveSteps, h.req(key, `{}`)) })
	<-gateA.Reached()
	h.expireLease(key)

	// B takes over and stops inside the confirm phase's transaction, before its writes.
	gateB := h.points.Block(chaos.BeforeStep(opFiveSteps, "confirm"))
	var (
		resB *saga.Result
		errB error
	)
	b := crash.Start(func() { resB, errB = h.newClient(nil, fiveSteps).Resume(t.Context(), h.scope, key, nil) })
	<-gateB.Reached()

	gateA.Release()
	require.False(t, a.Wait())
	require.ErrorAs(t, errA, new(*saga.InProgressError), "A's confirm must be fenced while B holds the key")
	require.Zero(t, h.effects(key, "confirm"), "A's confirm phase committed although B holds the lease")
	require.Equal(t, "reserve", h.key(key).RecoveryPoint)

	gateB.Release()
	require.False(t, b.Wait())
	require.NoError(t, errB)
	require.Equal(t, http.StatusCreated, resB.Response.Status)
	for _, step := range []string{"reserve", "confirm", "finish"} {
		require.Equal(t, 1, h.effects(key, step), "effect of %s", step)
	}
}
