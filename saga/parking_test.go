package saga_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

const opFlaky = "flaky_call"

// flaky is a phase, then a call that fails transiently while down is set, then a phase.
type flaky struct{ down atomic.Bool }

func (f *flaky) ops(h *harness) []*phases.Operation {
	return []*phases.Operation{{
		Name: opFlaky,
		Steps: []phases.Step{
			phases.Atomic("prepared", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				_, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, 'prepared')`, run.Key())
				return err
			}),
			phases.Call("call", func(ctx context.Context, run *phases.Run) error {
				if f.down.Load() {
					h.ext.apply(run.Key()+"/failed", mayHaveReached(run))
					return errors.New("provider unavailable")
				}
				return phases.Value[string]("receipt").Set(run, h.ext.apply(run.Key()+"/call", mayHaveReached(run)))
			}),
			phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, 'recorded')`, run.Key()); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
			}),
		},
	}}
}

// TestTransientFailuresPark: a transient failure stores nothing, gives the lease back at once
// and schedules the next attempt on the database clock; the attempt that exhausts MaxAttempts
// parks the key, which then answers a ParkedError to everyone until an operator resumes it.
func TestTransientFailuresPark(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	f.down.Store(true)
	h := newHarness(t, &saga.Config{MaxAttempts: 2, RetryDelay: func(int) time.Duration { return time.Hour }}, f.ops)
	key := "park-" + newID()

	_, err := h.client.Run(t.Context(), opFlaky, h.req(key, `{}`))
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	k := h.key(key)
	require.Equal(t, saga.KeyStatusStarted, k.Status)
	require.Equal(t, "prepared", k.RecoveryPoint)
	require.Equal(t, 1, k.Attempts)
	require.Nil(t, k.Response)
	require.False(t, k.Leased, "the lease is given back early")
	require.Contains(t, k.LastError, "provider unavailable")
	require.WithinDuration(t, k.DBNow.Add(time.Hour), k.NextAttemptAt, 5*time.Second, "next attempt scheduled by RetryDelay, on the database clock")

	// A client retry before the next attempt is due answers the same 503, with the time left,
	// and spends nothing (quick retries during an outage must not park).
	for range 5 {
		_, err = h.client.Run(t.Context(), opFlaky, h.req(key, `{}`))
		require.ErrorAs(t, err, &transient)
		require.InDelta(t, time.Hour.Seconds(), transient.RetryAfter.Seconds(), 5, "Retry-After is the time to the next attempt")
	}
	k = h.key(key)
	require.Equal(t, 1, k.Attempts, "retries before the next attempt spend nothing")
	n, _ := h.ext.calls(key + "/failed")
	require.Equal(t, 1, n, "a retry before the next attempt runs nothing")

	// Once due, a client retry takes the key over: the second and last attempt parks it.
	h.makeDue(key)
	_, err = h.client.Run(t.Context(), opFlaky, h.req(key, `{}`))
	var parked *saga.ParkedError
	require.ErrorAs(t, err, &parked)
	require.Equal(t, saga.ParkedAttemptsExhausted, parked.Reason)
	k = h.key(key)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, "prepared", k.RecoveryPoint, "a parked key keeps its recovery point")
	require.Equal(t, 2, k.Attempts)
	require.Contains(t, k.LastError, "attempts exhausted")
	require.Equal(t, saga.ParkedAttemptsExhausted, k.ParkedReason)

	_, err = h.client.Run(t.Context(), opFlaky, h.req(key, `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))
	_, err = h.client.Resume(t.Context(), h.scope, key, nil)
	require.ErrorAs(t, err, new(*saga.ParkedError), "only an operator's Resume with Parked continues a parked key")
	n, _ = h.ext.calls(key + "/failed")
	require.Equal(t, 2, n, "one call per attempt, none for answers to a parked key")

	f.down.Store(false)
	res, err := h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{Parked: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.Equal(t, 1, h.effects(key, "prepared"))
	require.Equal(t, 1, h.effects(key, "recorded"))
	k = h.key(key)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Equal(t, 3, k.Attempts)
}
