package saga_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestCallReferenceList: each reference a key journaled is found with the key, its state and
// the provider ids its attempts recorded; a reference no key journaled is not.
func TestCallReferenceList(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(*harness) []*phases.Operation {
		return []*phases.Operation{{Name: "charge", Steps: []phases.Step{
			phases.Call("charged", func(_ context.Context, run *phases.Run) error {
				if strings.HasPrefix(run.Key(), "down-") {
					return errors.New("the provider is down") // transient: the key stays started
				}
				run.RecordCall(phases.CallOutcomeSucceeded, "ch_"+run.Key())
				return nil
			}).WithReference(func(run *phases.Run) (string, error) { return "ref:" + run.Key(), nil }),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	done, down := "done-"+newID(), "down-"+newID()
	_, err := h.client.Run(t.Context(), "charge", h.req(done, `{}`))
	require.NoError(t, err)
	_, err = h.client.Run(t.Context(), "charge", h.req(down, `{}`))
	require.Error(t, err)

	refs := []string{"ref:" + done, "ref:" + down, "ref:nobody"}
	got, err := h.client.CallReferenceList(t.Context(), refs)
	require.NoError(t, err)
	require.ElementsMatch(t, []saga.CallReference{
		{Reference: "ref:" + done, Scope: h.scope, Key: done, Status: saga.KeyStatusCompleted, ProviderIDs: []string{"ch_" + done}},
		{Reference: "ref:" + down, Scope: h.scope, Key: down, Status: saga.KeyStatusStarted, ProviderIDs: []string{}},
	}, got)

	// More references than one statement takes: every batch is read.
	many := make([]string, 2500)
	for i := range many {
		many[i] = fmt.Sprintf("ref:none-%d", i)
	}
	many[2499] = "ref:" + done
	got, err = h.client.CallReferenceList(t.Context(), many)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, done, got[0].Key)

	// On a journal of realistic size the lookup is an index scan of its references (in a
	// transaction rolled back: the filler rows belong to no key).
	tx, err := h.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(t.Context())) }()
	_, err = tx.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
		SELECT 't', 'a', 'filler-' || i, 'charged', 1, 'ref:filler-' || i, now(), now() FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `ANALYZE pgsaga_call`)
	require.NoError(t, err)
	rows, err := tx.Query(t.Context(), `EXPLAIN SELECT c.reference FROM pgsaga_call c WHERE c.reference = ANY($1::text[])`, refs)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, strings.Join(plan, "\n"), "pgsaga_call_reference_idx", strings.Join(plan, "\n"))
}
