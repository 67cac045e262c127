package saga_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Each atomic phase is bounded by the lease from its own start, as a context.WithTimeout of the
// phase: its context has that deadline, a phase that outlives it finds its context done with
// context.DeadlineExceeded (a statement under way is cancelled), and a phase after a slow one
// has its own full bound.
func TestPhaseContextIsBoundedByTheLeaseFromItsStart(t *testing.T) {
	t.Parallel()
	type seen struct {
		deadline   time.Time
		start      time.Time
		err, cause error
	}
	var (
		mu   sync.Mutex
		runs = map[string][]seen{}
	)
	note := func(ctx context.Context, run *phases.Run, start time.Time) {
		d, ok := ctx.Deadline()
		require.True(t, ok, "a phase has a deadline")
		mu.Lock()
		defer mu.Unlock()
		runs[run.Key()] = append(runs[run.Key()], seen{deadline: d, start: start, err: ctx.Err(), cause: context.Cause(ctx)})
	}
	// slow takes most of a lease, and then a statement.
	slow := func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
		start := time.Now()
		select {
		case <-time.After(700 * time.Millisecond):
		case <-ctx.Done():
		}
		_, err := tx.Exec(ctx, `SELECT 1`)
		note(ctx, run, start)
		return err
	}
	h := newHarness(t, &saga.Config{Lease: time.Second}, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "bounded", Steps: []phases.Step{
			phases.Atomic("first", slow),
			phases.Call("called", func(context.Context, *phases.Run) error { return nil }),
			phases.Atomic("second", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if strings.HasPrefix(run.Key(), "stuck-") {
					// A statement that would outlive the bound: cancelled when it passes.
					start := time.Now()
					_, err := tx.Exec(ctx, `SELECT pg_sleep(30)`)
					note(ctx, run, start)
					return err
				}
				if err := slow(ctx, tx, run); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})

	key := "slow-" + newID()
	res, err := h.client.Run(t.Context(), "bounded", h.req(key, `{}`))
	require.NoError(t, err, "two phases of most of a lease each: each has its own")
	require.Equal(t, http.StatusCreated, res.Response.Status)
	got := runs[key]
	require.Len(t, got, 2)
	for _, s := range got {
		require.NoError(t, s.err)
		require.WithinDuration(t, s.start.Add(time.Second), s.deadline, 100*time.Millisecond, "the bound runs from the phase's start")
	}

	stuck := "stuck-" + newID()
	start := time.Now()
	_, err = h.client.Run(t.Context(), "bounded", h.req(stuck, `{}`))
	var transient *saga.TransientError
	require.True(t, errors.As(err, &transient), "%v", err)
	require.Less(t, time.Since(start), 10*time.Second, "the statement was cancelled when the phase's bound passed")
	got = runs[stuck]
	require.Len(t, got, 2)
	require.ErrorIs(t, got[1].err, context.DeadlineExceeded)
	require.ErrorIs(t, got[1].cause, context.DeadlineExceeded)

	// The next execution of the key (its retry, once due) runs its phases with fresh bounds.
	h.expireLease(stuck)
	h.makeDue(stuck)
	_, err = h.client.Run(t.Context(), "bounded", h.req(stuck, `{}`))
	require.True(t, errors.As(err, &transient), "%v", err)
	got = runs[stuck]
	// The retry's first phase starts as a new key's does, and is stopped at its first statement
	// by the key it finds stored; the retry then takes the key over and resumes at the second
	// phase, with a fresh bound.
	require.Len(t, got, 4, "the retry's first phase is stopped, and it resumes at the second phase")
	require.NoError(t, got[2].err)
	require.ErrorIs(t, got[3].err, context.DeadlineExceeded)
}

// A call's context has CallTimeout as its deadline and is done with context.DeadlineExceeded
// once that passes, as a context.WithTimeout of the call would be; the call's attempt is then a
// transient failure.
func TestCallContextEndsAtCallTimeout(t *testing.T) {
	t.Parallel()
	type seen struct {
		start, deadline time.Time
		err, cause      error
	}
	got := make(chan seen, 1)
	h := newHarness(t, &saga.Config{Lease: 3 * time.Second, CallTimeout: 300 * time.Millisecond}, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "timed", Steps: []phases.Step{
			phases.Call("waits", func(ctx context.Context, _ *phases.Run) error {
				start := time.Now()
				d, _ := ctx.Deadline()
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
				}
				got <- seen{start: start, deadline: d, err: ctx.Err(), cause: context.Cause(ctx)}
				return ctx.Err()
			}),
			phases.Atomic("answered", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	_, err := h.client.Run(t.Context(), "timed", h.req("timed-"+newID(), `{}`))
	var transient *saga.TransientError
	require.True(t, errors.As(err, &transient), "%v", err)
	s := <-got
	require.WithinDuration(t, s.start.Add(300*time.Millisecond), s.deadline, 50*time.Millisecond)
	require.ErrorIs(t, s.err, context.DeadlineExceeded)
	require.ErrorIs(t, s.cause, context.DeadlineExceeded)
}

// A heartbeat that hangs (here on the key's row lock, which the test holds) does not hold back
// the cut: the call is cut a quarter of a lease before its lease ends, with the cut's cause, and
// not only when CallTimeout passes.
func TestHangingHeartbeatDoesNotHoldBackTheCut(t *testing.T) {
	t.Parallel()
	const lease = 1500 * time.Millisecond
	started := make(chan struct{})
	type seen struct {
		at    time.Time
		cause error
	}
	got := make(chan seen, 1)
	h := newHarness(t, &saga.Config{Lease: lease, CallTimeout: 20 * time.Second}, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "hang", Steps: []phases.Step{
			phases.Call("waits", func(ctx context.Context, _ *phases.Run) error {
				close(started)
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Second):
				}
				got <- seen{at: time.Now(), cause: context.Cause(ctx)}
				return ctx.Err()
			}),
			phases.Atomic("answered", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	key := "hang-" + newID()
	done := make(chan error, 1)
	go func() {
		_, err := h.client.Run(t.Context(), "hang", h.req(key, `{}`))
		done <- err
	}()
	<-started
	claimed := time.Now() // the claim wrote the lease before the call started
	lock, err := h.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = lock.Exec(t.Context(), `SELECT 1 FROM pgsaga_key WHERE key = $1 FOR UPDATE`, key)
	require.NoError(t, err)
	s := <-got
	require.NoError(t, lock.Rollback(t.Context()))
	require.Less(t, s.at.Sub(claimed), lease, "the call outlived its lease")
	require.ErrorContains(t, s.cause, "could not be renewed")
	var transient *saga.TransientError
	require.True(t, errors.As(<-done, &transient))
}
