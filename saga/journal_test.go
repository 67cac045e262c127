package saga_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestCallOutcomeOutsideTheClassesIsJournaledUnknown: the journal holds one of the five outcome
// classes (no CHECK says so since migration 004: the engine does). A step that records anything
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
