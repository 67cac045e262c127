package saga_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// slowOperation claims its key in a phase, then blocks in a call until release is closed.
func slowOperation(wait time.Duration, entered chan<- struct{}, release <-chan struct{}) *phases.Operation {
	return &phases.Operation{
		Name:         "slow",
		WaitInFlight: wait,
		Steps: []phases.Step{
			phases.Atomic("claimed", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				_, err := tx.Exec(ctx, `INSERT INTO effects (key, what) VALUES ($1, 'claimed')`, run.Key())
				return err
			}),
			phases.Call("outside", func(ctx context.Context, run *phases.Run) error {
				entered <- struct{}{}
				<-release
				return nil
			}),
			phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
			}),
		},
	}
}

func TestDuplicateWaitsForInFlightRequest(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, db := newClient(t, slowOperation(10*time.Second, entered, release))
	key := uuid.NewString()

	first := make(chan *saga.Result, 1)
	go func() {
		res, err := c.Run(context.Background(), "slow", request(key))
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	<-entered

	second := make(chan *saga.Result, 1)
	go func() {
		res, err := c.Run(context.Background(), "slow", request(key))
		if err != nil {
			t.Error(err)
		}
		second <- res
	}()
	// The duplicate must still be waiting: nothing has finished.
	select {
	case <-second:
		t.Fatal("the duplicate answered before the first request finished")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	released := time.Now()

	a, b := <-first, <-second
	// Woken by the notification, not by the end of its 10s wait.
	require.Less(t, time.Since(released), 5*time.Second)
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.False(t, a.Replayed)
	require.True(t, b.Replayed, "the waiting duplicate answers with the stored response")
	require.Equal(t, a.Response.Body, b.Response.Body)
	require.Equal(t, 1, countEffects(t, db, key))
}

func TestDuplicateWaitIsBounded(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, _ := newClient(t, slowOperation(150*time.Millisecond, entered, release))
	key := uuid.NewString()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Run(context.Background(), "slow", request(key))
	}()
	<-entered

	start := time.Now()
	_, err := c.Run(t.Context(), "slow", request(key))
	var inProgress *saga.InProgressError
	require.ErrorAs(t, err, &inProgress)
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	require.Positive(t, inProgress.LeaseRemaining)
	close(release)
	<-done
}
