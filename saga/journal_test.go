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
