package saga_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// requestLog is an Observer that records every request outcome.
type requestLog struct {
	mu       sync.Mutex
	outcomes []saga.RequestOutcome
}

func (l *requestLog) Request(_ string, o saga.RequestOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, o)
}
func (*requestLog) Step(string, string, time.Duration)                     {}
func (*requestLog) Call(string, string, phases.CallOutcome, time.Duration) {}
func (*requestLog) Resumed(string)                                         {}
func (*requestLog) Parked(string, saga.ParkedReason)                       {}

// take returns the outcomes recorded since the last take.
func (l *requestLog) take() []saga.RequestOutcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.outcomes
	l.outcomes = nil
	return out
}

// TestEveryRequestIsObservedOnce walks every way a request can end — through Run, RunTx and
// the HTTP handler, admission refusals and single-transaction failures included — and checks
// that each is reported to the Observer exactly once, with the outcome its answer means.
// Resumes by the worker or an operator are not requests.
func TestEveryRequestIsObservedOnce(t *testing.T) {
	t.Parallel()
	log := &requestLog{}
	var call func(*phases.Run) error
	ops := func(*harness) []*phases.Operation {
		return []*phases.Operation{
			{
				Name:     "phased",
				Validate: func(body []byte) error { return validIf(!strings.Contains(string(body), "bad")) },
				Steps: []phases.Step{
					phases.Atomic("prepared", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
					phases.Call("called", func(_ context.Context, run *phases.Run) error { return call(run) }),
					phases.Atomic("answered", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
						return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
					}),
				},
			},
			{
				Name: "single",
				Steps: []phases.Step{phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					var body struct{ Note string }
					if err := run.Decode(&body); err != nil {
						return phases.Permanent(err)
					}
					if body.Note == "taken" {
						return phases.Reject(http.StatusConflict, "taken", "already taken")
					}
					// A NUL in the note is data the database refuses: 400, nothing stored.
					if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step, detail) VALUES ($1, 'done', $2)`, run.Key(), body.Note); err != nil {
						return err
					}
					return run.Respond(http.StatusCreated, map[string]string{"note": body.Note})
				})},
			},
		}
	}
	h := newHarness(t, &saga.Config{Observer: log, MaxAttempts: 2, RetryDelay: func(int) time.Duration { return time.Hour }}, ops)
	ctx := t.Context()
	run := func(op, key, body string) error {
		_, err := h.client.Run(ctx, op, h.req(key, body))
		return err
	}
	runTx := func(op, key, body string) error {
		tx, err := h.db.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = h.client.RunTx(ctx, tx, op, h.req(key, body))
		if err != nil {
			require.NoError(t, tx.Rollback(ctx))
			return err
		}
		require.NoError(t, tx.Commit(ctx))
		return nil
	}
	handler, err := h.client.Handler("single", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) { return h.scope, nil }})
	require.NoError(t, err)
	serve := func(key, body string) int {
		r := httptest.NewRequest(http.MethodPost, "/test", strings.NewReader(body))
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Code
	}
	once := func(want saga.RequestOutcome, what string) {
		t.Helper()
		require.Equal(t, []saga.RequestOutcome{want}, log.take(), what)
	}
	var (
		invalid    *saga.InvalidRequestError
		transient  *saga.TransientError
		parked     *saga.ParkedError
		inProgress *saga.InProgressError
	)
	ok := func(run *phases.Run) error { run.RecordCall(phases.CallOutcomeSucceeded, "ch_1"); return nil }

	call = ok
	require.NoError(t, run("phased", "phased-ok-01", `{}`))
	once(saga.OutcomeExecuted, "a phased request that completes")
	require.NoError(t, run("phased", "phased-ok-01", `{}`))
	once(saga.OutcomeReplayed, "its retry")
	require.ErrorIs(t, run("phased", "phased-ok-01", `{"other":1}`), saga.ErrKeyReused)
	once(saga.OutcomeMismatch, "the key with another body")
	require.ErrorAs(t, run("phased", "phased-bad-01", `{"bad":1}`), &invalid)
	once(saga.OutcomeRejected, "a body the operation's validation refuses")

	gate := h.points.Block(chaos.BeforeStep("phased", "called"))
	first := crash.Start(func() { _ = run("phased", "phased-busy-1", `{}`) })
	<-gate.Reached()
	require.ErrorAs(t, run("phased", "phased-busy-1", `{}`), &inProgress)
	once(saga.OutcomeInProgress, "a duplicate while the first is in flight")
	gate.Release()
	require.False(t, first.Wait())
	once(saga.OutcomeExecuted, "the first, once it finished")

	call = func(run *phases.Run) error {
		run.RecordCall(phases.CallOutcomeFailedBefore, "")
		return errors.New("provider unavailable")
	}
	require.ErrorAs(t, run("phased", "phased-down-1", `{}`), &transient)
	once(saga.OutcomeUnavailable, "a transient failure")
	require.ErrorAs(t, run("phased", "phased-down-1", `{}`), &transient)
	once(saga.OutcomeUnavailable, "a retry before the next attempt is due")
	h.makeDue("phased-down-1")
	require.ErrorAs(t, run("phased", "phased-down-1", `{}`), &parked)
	once(saga.OutcomeParked, "the last attempt, which parks")
	require.ErrorAs(t, run("phased", "phased-down-1", `{}`), &parked)
	once(saga.OutcomeParked, "a retry of a parked key")

	call = ok
	_, err = h.client.Resume(ctx, h.scope, "phased-down-1", &saga.ResumeOpts{Parked: true, By: "operator"})
	require.NoError(t, err)
	require.Empty(t, log.take(), "an operator's resume is not a request")

	require.NoError(t, run("single", "single-ok-01", `{"note":"a"}`))
	once(saga.OutcomeExecuted, "a single-transaction request")
	require.NoError(t, run("single", "single-taken-1", `{"note":"taken"}`))
	once(saga.OutcomeExecuted, "a stored business rejection is an answer")
	require.ErrorAs(t, run("single", "single-nul-01", `{"note":"a\u0000b"}`), &invalid)
	once(saga.OutcomeRejected, "data the database refuses")

	require.NoError(t, runTx("single", "tx-ok-000001", `{"note":"b"}`))
	once(saga.OutcomeExecuted, "RunTx")
	require.NoError(t, runTx("single", "tx-ok-000001", `{"note":"b"}`))
	once(saga.OutcomeReplayed, "RunTx's retry")
	require.ErrorAs(t, runTx("single", "tx-nul-00001", `{"note":"a\u0000b"}`), &invalid)
	once(saga.OutcomeRejected, "RunTx with data the database refuses")
	require.ErrorIs(t, runTx("phased", "tx-phased-01", `{}`), saga.ErrNotSingleTransaction)
	once(saga.OutcomeError, "RunTx of a phased operation")
	require.Error(t, run("nonexistent", "unknown-op-01", `{}`))
	once(saga.OutcomeError, "an operation the client does not run")

	require.Equal(t, http.StatusBadRequest, serve("", `{}`))
	once(saga.OutcomeRejected, "the handler: no Idempotency-Key")
	require.Equal(t, http.StatusBadRequest, serve("short", `{}`))
	once(saga.OutcomeRejected, "the handler: a malformed key")
	require.Equal(t, http.StatusBadRequest, serve("handler-json-1", `{not json`))
	once(saga.OutcomeRejected, "the handler: a body that is not JSON")
	require.Equal(t, http.StatusCreated, serve("handler-ok-001", `{"note":"c"}`))
	once(saga.OutcomeExecuted, "the handler: a request that runs")
	require.Equal(t, http.StatusCreated, serve("handler-ok-001", `{"note":"c"}`))
	once(saga.OutcomeReplayed, "the handler: its retry")
}
