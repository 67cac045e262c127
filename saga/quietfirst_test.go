package saga_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// quietOp is two atomic phases around a call, the first of which sends a statement only while
// loud is set, as the side-by-side harness's phased operation (which never does).
// The call waits on hold's channel when one is set.
func quietOp(loud *atomic.Bool, calls *atomic.Int32, hold *atomic.Pointer[chan struct{}]) *phases.Operation {
	return &phases.Operation{Name: "quiet", Steps: []phases.Step{
		phases.Atomic("created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			if loud.Load() {
				_, err := tx.Exec(ctx, `INSERT INTO effects (key, what) VALUES ($1, 'created')`, run.Key())
				return err
			}
			return nil
		}),
		phases.Call("charged", func(ctx context.Context, run *phases.Run) error {
			calls.Add(1)
			if h := hold.Load(); h != nil {
				<-*h
			}
			return nil
		}),
		phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
		}),
	}}
}

// requireTripsLike checks the round trips taken, each given as its statements' beginnings joined
// by " + ".
func requireTripsLike(t *testing.T, got []chaos.Trip, want ...string) {
	t.Helper()
	var g []string
	for _, trip := range got {
		g = append(g, trip.String())
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		stmts := strings.Split(want[i], " + ")
		ok = len(stmts) == len(got[i])
		for j := 0; ok && j < len(stmts); j++ {
			ok = strings.HasPrefix(got[i][j], stmts[j])
		}
	}
	require.True(t, ok, "want:\n  %s\ngot:\n  %s", strings.Join(want, "\n  "), strings.Join(g, "\n  "))
}

// The first round trip depends on the request alone. A new key's first phase reads the key right
// before its first statement; a phase that sends no statement claims the key with its commit,
// alone: a new request costs one round trip per phase (the floor of two writes), from the first
// request on, and a retry is answered from a read after its claim found the key stored (two
// round trips, no transaction). A phase that sends a statement reads first, and a retry is
// answered from that read, with nothing of the phase sent.
func TestFirstRoundTripDependsOnTheRequestAlone(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), createEffects)
	require.NoError(t, err)
	counter := &chaos.Counter{}
	pool, err := chaos.CountingPool(t.Context(), db.URL, 4, counter)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var (
		loud  atomic.Bool
		calls atomic.Int32
		hold  atomic.Pointer[chan struct{}]
	)
	c, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{quietOp(&loud, &calls, &hold)}})
	require.NoError(t, err)
	run := func(key, body string) (*saga.Result, error) {
		return c.Run(t.Context(), "quiet", &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: key,
			Method: "POST", Path: "/quiet", Body: []byte(body)})
	}

	// The client's very first request: two round trips, the floor of two writes.
	for _, key := range []string{"quiet-0001", "quiet-0002"} {
		res, err := run(key, `{}`)
		require.NoError(t, err)
		require.False(t, res.Replayed)
		requireTripsLike(t, counter.Take(),
			"INSERT INTO pgsaga_key",                     // claims, journaling the call, alone: no BEGIN, no COMMIT
			"UPDATE pgsaga_key SET status = 'completed'", // alone: no row back would be the fence
		)
	}

	// A retry: the claim finds the key stored (and writes nothing), the read answers.
	res, err := run("quiet-0002", `{}`)
	require.NoError(t, err)
	require.True(t, res.Replayed)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	requireTripsLike(t, counter.Take(), "INSERT INTO pgsaga_key", "SELECT operation, method, path")
	_, err = run("quiet-0002", `{"other":1}`)
	require.ErrorIs(t, err, saga.ErrKeyReused)
	requireTripsLike(t, counter.Take(), "INSERT INTO pgsaga_key", "SELECT operation, method, path")
	require.EqualValues(t, 2, calls.Load(), "a retry runs no call")

	// A phase that sends a statement reads the key first, on its own connection, right before
	// that statement: a retry is answered from the read, and nothing of the phase is sent.
	loud.Store(true)
	res, err = run("quiet-0002", `{}`)
	require.NoError(t, err)
	require.True(t, res.Replayed)
	requireTripsLike(t, counter.Take(), "SELECT operation, method, path")
	require.Equal(t, 0, countEffects(t, db, "quiet-0002"), "the duplicate's phase sent nothing")
	_, err = run("quiet-0003", `{}`)
	require.NoError(t, err)
	requireTripsLike(t, counter.Take(),
		"SELECT operation, method, path",
		"begin + INSERT INTO effects",
		"INSERT INTO pgsaga_key + commit",
		"UPDATE pgsaga_key SET status = 'completed'", // alone: no row back would be the fence
	)
	require.Equal(t, 1, countEffects(t, db, "quiet-0003"))

	// Quiet again: the next new key is claimed at once, whatever the last request did.
	loud.Store(false)
	_, err = run("quiet-0004", `{}`)
	require.NoError(t, err)
	requireTripsLike(t, counter.Take(), "INSERT INTO pgsaga_key", "UPDATE pgsaga_key SET status = 'completed'")
}

// Concurrent duplicates of a new key whose first phase sends no statement: one execution claims
// it and calls once; every other request is answered from the key (in progress while it runs,
// the stored response after), never by a second execution.
func TestQuietFirstPhaseConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	var (
		loud  atomic.Bool
		calls atomic.Int32
		hold  atomic.Pointer[chan struct{}]
	)
	c, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{quietOp(&loud, &calls, &hold)}})
	require.NoError(t, err)
	run := func(key string) (*saga.Result, error) {
		return c.Run(context.Background(), "quiet", &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: key,
			Method: "POST", Path: "/quiet", Body: []byte(`{}`)})
	}
	for round := range 3 {
		// Concurrent duplicates of each new key race to claim it.
		calls.Store(0)
		gate := make(chan struct{})
		hold.Store(&gate)
		key := "dup-0000" + strings.Repeat("y", round)
		const n = 8
		var (
			wg                                sync.WaitGroup
			executed, replayed, inFlight, bad atomic.Int32
		)
		for range n {
			wg.Go(func() {
				res, err := run(key)
				var inProgress *saga.InProgressError
				switch {
				case err == nil && !res.Replayed:
					executed.Add(1)
				case err == nil:
					replayed.Add(1)
				case errors.As(err, &inProgress):
					inFlight.Add(1)
				default:
					bad.Add(1)
					t.Error(err)
				}
			})
		}
		require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
		close(gate)
		wg.Wait()
		hold.Store(nil)
		require.EqualValues(t, 1, executed.Load())
		require.EqualValues(t, n-1, replayed.Load()+inFlight.Load())
		require.EqualValues(t, 0, bad.Load())
		require.EqualValues(t, 1, calls.Load())
	}
}
