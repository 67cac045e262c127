package saga_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestCallOutcomeOutsideTheClassesIsJournaledUnknown: the journal holds one of the five outcome
// classes (the schema's CHECK refuses any other). A step that records anything
// else is journaled as unknown — the class that assumes least — and the operation goes on as the
// step's error says.
func TestCallOutcomeOutsideTheClassesIsJournaledUnknown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "odd_outcome", Steps: []phases.Step{
			phases.Atomic("prepared", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
			phases.Call("notify", func(_ context.Context, run *phases.Run) error {
				run.RecordCall(phases.CallOutcome("maybe"), "p-1")
				return nil
			}),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	key := "odd-outcome-" + newID()
	res, err := h.client.Run(t.Context(), "odd_outcome", h.req(key, `{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	k := h.key(key)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Len(t, k.Calls, 1)
	require.Equal(t, phases.CallOutcomeUnknown, k.Calls[0].Outcome)
	require.Equal(t, "p-1", k.Calls[0].ProviderID)
}

// TestCallWithoutReferenceJournalsTheIntentsOwn: a call step that declares no reference gets
// the default one, derived from the intent: journaled before the call, given to the step, the
// same for a second execution of the same intent (after its rows are lost), different for
// another step.
func TestCallWithoutReferenceJournalsTheIntentsOwn(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 4)
	call := func(_ context.Context, run *phases.Run) error {
		seen <- run.Reference()
		return nil
	}
	h := newHarness(t, nil, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "default_reference", Steps: []phases.Step{
			phases.Call("first", call),
			phases.Call("second", call),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	key := "default-reference-" + newID()
	want := []string{
		phases.DefaultReference(h.scope.Tenant, h.scope.Actor, key, "default_reference", "first"),
		phases.DefaultReference(h.scope.Tenant, h.scope.Actor, key, "default_reference", "second"),
	}
	require.NotEqual(t, want[0], want[1])
	for range 2 {
		_, err := h.client.Run(t.Context(), "default_reference", h.req(key, `{}`))
		require.NoError(t, err)
		k := h.key(key)
		require.Len(t, k.Calls, 2)
		require.Equal(t, want, []string{k.Calls[0].Reference, k.Calls[1].Reference})
		require.Equal(t, want, []string{<-seen, <-seen})
		// A failover that loses the key's commits: the next execution starts afresh.
		_, err = h.db.Pool.Exec(t.Context(), `DELETE FROM pgsaga_call WHERE key = $1`, key)
		require.NoError(t, err)
		_, err = h.db.Pool.Exec(t.Context(), `DELETE FROM pgsaga_key WHERE key = $1`, key)
		require.NoError(t, err)
	}
}

// TestKeyGetReportsTheWholeJournal: KeyGet's calls are the journal's rows, every field of them,
// whether an entry lives in the key row (the call the claim journaled) or in pgsaga_call.
func TestKeyGetReportsTheWholeJournal(t *testing.T) {
	t.Parallel()
	call := func(window time.Duration, id string) phases.CallFunc {
		return func(ctx context.Context, run *phases.Run) error {
			if err := run.DeclareInFlight(ctx, window); err != nil {
				return err
			}
			run.RecordCall(phases.CallOutcomeSucceeded, id)
			return nil
		}
	}
	h := newHarness(t, nil, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "journaled", Steps: []phases.Step{
			phases.Atomic("prepared", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
			phases.Call("first", call(1500*time.Millisecond, "p-1")),
			phases.Atomic("between", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
			phases.Call("second", call(2*time.Second, "p-2")),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	key := "journal-" + newID()
	_, err := h.client.Run(t.Context(), "journaled", h.req(key, `{}`))
	require.NoError(t, err)

	rows, err := h.db.Pool.Query(t.Context(), `SELECT step, attempt, coalesce(reference, ''), started_at, ended_at, deadline,
		coalesce(max_in_flight_ms, 0), coalesce(outcome, ''), coalesce(provider_id, '')
		FROM pgsaga_call_journal WHERE key = $1 ORDER BY started_at`, key)
	require.NoError(t, err)
	var want []phases.CallRecord
	for rows.Next() {
		var (
			c     phases.CallRecord
			ms    int64
			outc  string
			ended time.Time
		)
		require.NoError(t, rows.Scan(&c.Step, &c.Attempt, &c.Reference, &c.StartedAt, &ended, &c.Deadline, &ms, &outc, &c.ProviderID))
		c.EndedAt, c.MaxInFlight, c.Outcome = &ended, time.Duration(ms)*time.Millisecond, phases.CallOutcome(outc)
		want = append(want, c)
	}
	require.NoError(t, rows.Err())
	require.Len(t, want, 2)
	require.Equal(t, 1500*time.Millisecond, want[0].MaxInFlight)

	got := h.key(key).Calls
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		require.Equal(t, w.Step, g.Step)
		require.Equal(t, w.Attempt, g.Attempt)
		require.Equal(t, w.Reference, g.Reference)
		require.True(t, w.StartedAt.Equal(g.StartedAt), "started_at %s, KeyGet %s", w.StartedAt, g.StartedAt)
		require.NotNil(t, g.EndedAt)
		require.True(t, w.EndedAt.Equal(*g.EndedAt), "ended_at %s, KeyGet %s", w.EndedAt, g.EndedAt)
		require.True(t, w.Deadline.Equal(g.Deadline), "deadline %s, KeyGet %s", w.Deadline, g.Deadline)
		require.Equal(t, w.MaxInFlight, g.MaxInFlight)
		require.Equal(t, w.Outcome, g.Outcome)
		require.Equal(t, w.ProviderID, g.ProviderID)
	}
}
