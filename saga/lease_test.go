package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// callMeter counts the calls of an operation and the most that ran at once.
type callMeter struct {
	running, maxRunning, total atomic.Int32
	hold                       <-chan time.Time
}

func (m *callMeter) enter() {
	m.total.Add(1)
	n := m.running.Add(1)
	for {
		old := m.maxRunning.Load()
		if n <= old || m.maxRunning.CompareAndSwap(old, n) {
			return
		}
	}
}

func (m *callMeter) leave() { m.running.Add(-1) }

// lockedThenCall is an operation whose first phase waits for a row lock (held by the test),
// then a call that takes callFor (or, when callFor is 0, until m.hold is closed), then a phase
// that answers.
func lockedThenCall(m *callMeter, callFor time.Duration) func(*harness) []*phases.Operation {
	return func(*harness) []*phases.Operation {
		return []*phases.Operation{{
			Name: "locked_then_call",
			Steps: []phases.Step{
				phases.Atomic("locked", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					_, err := tx.Exec(ctx, `UPDATE test_reservation SET status = 'held' WHERE id = 'the-lock'`)
					return err
				}),
				phases.Call("call", func(ctx context.Context, run *phases.Run) error {
					m.enter()
					defer m.leave()
					wait := m.hold
					if callFor > 0 {
						wait = time.After(callFor)
					}
					select {
					case <-wait:
						return nil
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				}),
				phases.Atomic("answered", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					return run.Respond(http.StatusCreated, map[string]int32{"calls": m.total.Load()})
				}),
			},
		}}
	}
}

// TestCallNeverRunsOnASpentLease: with a 2s lease, a first phase that waits 1.7s on a lock would,
// were its lease written with now() — the transaction's start — leave the key nearly free again
// when the 1s call began, and a duplicate retrying on 409 would take it over and run the call a
// second time, concurrently. The lease must be measured from the moment it is written, and the
// call must run once, alone.
func TestCallNeverRunsOnASpentLease(t *testing.T) {
	t.Parallel()
	m := &callMeter{}
	lease := 2 * time.Second
	h := newHarness(t, &saga.Config{Lease: lease, CallTimeout: 1500 * time.Millisecond}, lockedThenCall(m, time.Second))
	_, err := h.db.Pool.Exec(t.Context(), `INSERT INTO test_reservation (id, key, status) VALUES ('the-lock', '-', 'held')`)
	require.NoError(t, err)
	key := "spent-lease-" + newID()

	// The test holds the row lock for 1.7s of the 2s lease.
	lock, err := h.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = lock.Exec(t.Context(), `SELECT 1 FROM test_reservation WHERE id = 'the-lock' FOR UPDATE`)
	require.NoError(t, err)
	go func() {
		time.Sleep(1700 * time.Millisecond)
		_ = lock.Rollback(context.Background())
	}()

	var (
		wg    sync.WaitGroup
		first *saga.Result
	)
	wg.Go(func() {
		var err error
		first, err = h.client.Run(t.Context(), "locked_then_call", h.req(key, `{}`))
		require.NoError(t, err)
	})
	// A duplicate that keeps retrying while the first is in flight, as a client honouring 409
	// would (a little faster, to find any window).
	var duplicate *saga.Result
	wg.Go(func() {
		// The duplicate starts once the first request claimed the key (its first phase waited
		// on the lock meanwhile).
		require.Eventually(t, func() bool { return h.key(key) != nil }, 10*time.Second, 5*time.Millisecond)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			res, err := h.newClient(&saga.Config{Lease: lease}, lockedThenCall(m, time.Second)).Run(t.Context(), "locked_then_call", h.req(key, `{}`))
			var inProgress *saga.InProgressError
			switch {
			case errors.As(err, &inProgress):
				time.Sleep(50 * time.Millisecond)
				continue
			case errors.Is(err, saga.ErrKeyNotFound):
				continue
			}
			require.NoError(t, err)
			duplicate = res
			return
		}
		t.Error("the duplicate never got an answer")
	})
	wg.Wait()

	require.EqualValues(t, 1, m.maxRunning.Load(), "the call ran twice at once")
	require.EqualValues(t, 1, m.total.Load(), "the call ran more than once")
	require.Equal(t, http.StatusCreated, first.Response.Status)
	require.False(t, first.Replayed)
	require.True(t, duplicate.Replayed)
	require.Equal(t, first.Response.Body, duplicate.Response.Body)
	k := h.key(key)
	require.Len(t, k.Calls, 1, "one journaled call attempt")
	require.Equal(t, phases.CallOutcomeSucceeded, k.Calls[0].Outcome)
}

// TestLongCallIsKeptLeasedByHeartbeats: a call that runs for twice the lease (CallTimeout
// allows it) is kept leased by heartbeats: a duplicate arriving during it is told the request is
// in progress, with the lease left, and never takes the key over.
func TestLongCallIsKeptLeasedByHeartbeats(t *testing.T) {
	t.Parallel()
	m := &callMeter{}
	lease := 1500 * time.Millisecond
	cfg := &saga.Config{Lease: lease, CallTimeout: 10 * time.Second}
	h := newHarness(t, cfg, lockedThenCall(m, 2*lease))
	_, err := h.db.Pool.Exec(t.Context(), `INSERT INTO test_reservation (id, key, status) VALUES ('the-lock', '-', 'held')`)
	require.NoError(t, err)
	key := "heartbeat-" + newID()

	done := make(chan struct{})
	var first *saga.Result
	go func() {
		defer close(done)
		first, err = h.client.Run(t.Context(), "locked_then_call", h.req(key, `{}`))
	}()
	refusals := 0
	for {
		select {
		case <-done:
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, first.Response.Status)
			require.EqualValues(t, 1, m.total.Load())
			require.Greater(t, refusals, 5, "the duplicate kept asking during the call")
			return
		case <-time.After(100 * time.Millisecond):
		}
		if m.total.Load() == 0 {
			continue
		}
		_, dupErr := h.newClient(cfg, lockedThenCall(m, 2*lease)).Run(t.Context(), "locked_then_call", h.req(key, `{}`))
		var inProgress *saga.InProgressError
		if errors.As(dupErr, &inProgress) {
			refusals++
			require.Positive(t, inProgress.LeaseRemaining)
			require.LessOrEqual(t, inProgress.LeaseRemaining, lease)
			continue
		}
		select {
		case <-done: // it finished between the check and the duplicate: a replay is right
			continue
		default:
		}
		t.Fatalf("a duplicate was answered %v while the call ran", dupErr)
	}
}

// TestInProgressAnswersTheLeaseLeft: a 409 says how long the lease in flight
// still holds the key, not always one second.
func TestInProgressAnswersTheLeaseLeft(t *testing.T) {
	t.Parallel()
	hold := make(chan time.Time)
	m := &callMeter{hold: hold}
	h := newHarness(t, &saga.Config{Lease: 20 * time.Second}, lockedThenCall(m, 0))
	_, err := h.db.Pool.Exec(t.Context(), `INSERT INTO test_reservation (id, key, status) VALUES ('the-lock', '-', 'held')`)
	require.NoError(t, err)
	key := "lease-left-" + newID()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = h.client.Run(t.Context(), "locked_then_call", h.req(key, `{}`)) })
	t.Cleanup(func() { close(hold); wg.Wait() })
	require.Eventually(t, func() bool { return m.total.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	handler, err := h.client.Handler("locked_then_call", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) { return h.scope, nil }})
	require.NoError(t, err)
	rec := serve(handler, key, `{}`)
	require.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
	retryAfter := rec.Header().Get("Retry-After")
	require.Contains(t, []string{"16", "17", "18", "19", "20"}, retryAfter, "Retry-After is the lease left, in whole seconds")
}

// serve sends one POST with key and body to handler and records the answer.
func serve(handler http.Handler, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/test", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	return rec
}

// jsonField returns the raw JSON of one member of a JSON object.
func jsonField(t *testing.T, body []byte, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m), string(body))
	return string(m[name])
}
