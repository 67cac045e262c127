package saga_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestWaitingDuplicatesNeverStarveThePool sends many duplicates of a phased request that waits
// for its duplicates (WaitInFlight) through a small pool: the waiters must hold no pooled
// connection while they wait, so the execution in flight gets its connections and every caller
// is answered within the lease and some slack, with one effect.
func TestWaitingDuplicatesNeverStarveThePool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ poolSize, duplicates int }{{4, 10}, {4, 50}, {2, 10}, {2, 50}} {
		t.Run(fmt.Sprintf("pool=%d/duplicates=%d", tc.poolSize, tc.duplicates), func(t *testing.T) {
			t.Parallel()
			const lease = 3 * time.Second
			db := dbtest.NewDB(t)
			_, err := db.Pool.Exec(t.Context(), createEffects)
			require.NoError(t, err)
			cfg, err := pgxpool.ParseConfig(db.URL)
			require.NoError(t, err)
			cfg.MaxConns = int32(tc.poolSize)
			pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
			require.NoError(t, err)
			// A pool whose connections the waiters hold would hang Close: a failed test reports.
			t.Cleanup(func() {
				if !t.Failed() {
					pool.Close()
				}
			})

			entered, release := make(chan struct{}, 1), make(chan struct{})
			op := slowOperation(30*time.Second, entered, release)
			c, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{op}, Lease: lease})
			require.NoError(t, err)
			key := uuid.NewString()

			first := make(chan error, 1)
			go func() {
				_, err := c.Run(context.Background(), "slow", request(key))
				first <- err
			}()
			<-entered

			start := time.Now()
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				answered []time.Duration
				outcomes = map[string]int{}
			)
			for range tc.duplicates {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					res, err := c.Run(ctx, "slow", request(key))
					mu.Lock()
					defer mu.Unlock()
					answered = append(answered, time.Since(start))
					var inProgress *saga.InProgressError
					switch {
					case err == nil && res.Replayed:
						outcomes["replayed"]++
					case errors.As(err, &inProgress):
						outcomes["in_progress"]++
					default:
						outcomes[fmt.Sprintf("other: %v", err)]++
					}
				})
			}
			// The call finishes while the duplicates wait: they must wake up and replay.
			time.Sleep(200 * time.Millisecond)
			close(release)
			select {
			case err := <-first:
				require.NoError(t, err)
			case <-time.After(lease + 5*time.Second):
				t.Fatalf("the execution in flight got no connection for %s: the waiters starve it", lease+5*time.Second)
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(lease + 5*time.Second):
				t.Fatalf("duplicates unanswered after %s", lease+5*time.Second)
			}
			for _, d := range answered {
				require.Less(t, d, lease+2*time.Second, "a duplicate answered past the lease and its slack")
			}
			require.Equal(t, map[string]int{"replayed": tc.duplicates}, outcomes)
			require.Equal(t, 1, countEffects(t, db, key), "one effect")
		})
	}
}

// TestWaitingDuplicateHonoursItsContext: a duplicate whose caller's deadline comes before the
// execution in flight finishes is answered at that deadline, not at the end of its wait.
func TestWaitingDuplicateHonoursItsContext(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, _ := newClient(t, slowOperation(20*time.Second, entered, release))
	key := uuid.NewString()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Run(context.Background(), "slow", request(key))
	}()
	<-entered
	defer func() { close(release); <-done }()

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Run(ctx, "slow", request(key))
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 3*time.Second, "the wait outlived its caller's deadline")
}
