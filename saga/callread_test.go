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

	"github.com/pgsaga/pgsaga/internal/sibling"
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
				switch {
				case strings.HasPrefix(run.Key(), "down-"):
					return errors.New("the provider is down") // transient: the key stays started
				case strings.HasPrefix(run.Key(), "again-") && run.Attempt() == 1:
					run.RecordCall(phases.CallOutcomeDeclined, "ch_first")
					return errors.New("declined, for now") // transient: the next attempt charges again
				}
				run.RecordCall(phases.CallOutcomeSucceeded, "ch_"+run.Key())
				return nil
			}).WithReference(func(run *phases.Run) (string, error) { return "ref:" + run.Key(), nil }),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
			}),
		}}}
	})
	done, down, again := "done-"+newID(), "down-"+newID(), "again-"+newID()
	_, err := h.client.Run(t.Context(), "charge", h.req(done, `{}`))
	require.NoError(t, err)
	_, err = h.client.Run(t.Context(), "charge", h.req(down, `{}`))
	require.Error(t, err)
	// A key whose attempts span the journal's two places: the first attempt's entry, which its
	// claim journaled, is in the key row; the second's, which its takeover journaled, a
	// pgsaga_call row.
	_, err = h.client.Run(t.Context(), "charge", h.req(again, `{}`))
	require.Error(t, err)
	_, err = h.client.Resume(t.Context(), h.scope, again, nil)
	require.NoError(t, err)
	require.Equal(t, 1, h.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND call_step = 'charged'
		AND call_reference = 'ref:' || key AND call_outcome = 'declined' AND call_provider_id = 'ch_first'`, again))
	require.Equal(t, 1, h.count(`SELECT count(*) FROM pgsaga_call WHERE key = $1 AND step = 'charged' AND attempt = 2
		AND reference = 'ref:' || key AND outcome = 'succeeded' AND provider_id = 'ch_' || key`, again))

	refs := []string{"ref:" + done, "ref:" + down, "ref:" + again, "ref:nobody"}
	got, err := h.client.Internal(sibling.Token{}).CallReferenceList(t.Context(), refs)
	require.NoError(t, err)
	ref := func(key string, status saga.KeyStatus, ids ...string) sibling.CallReference {
		return sibling.CallReference{Reference: "ref:" + key, Tenant: h.scope.Tenant, Actor: h.scope.Actor, Key: key,
			Status: string(status), ProviderIDs: append([]string{}, ids...)}
	}
	require.ElementsMatch(t, []sibling.CallReference{
		ref(done, saga.KeyStatusCompleted, "ch_"+done),
		ref(down, saga.KeyStatusStarted),
		ref(again, saga.KeyStatusCompleted, "ch_"+again, "ch_first"),
	}, got)

	// More references than one statement takes: every batch is read.
	many := make([]string, 2500)
	for i := range many {
		many[i] = fmt.Sprintf("ref:none-%d", i)
	}
	many[2499] = "ref:" + done
	got, err = h.client.Internal(sibling.Token{}).CallReferenceList(t.Context(), many)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, done, got[0].Key)

	// On a journal of realistic size the lookup is an index scan of the references in each of
	// the journal's two places (in a transaction rolled back: the filler rows belong to no key).
	tx, err := h.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(t.Context())) }()
	_, err = tx.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
		SELECT 't', 'a', 'filler-' || i, 'charged', 2, 'ref:filler-' || i, now(), now() FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash,
			request_body, lease_token, call_step, call_reference, call_started_at, call_deadline)
		SELECT 't', 'a', 'filler-' || i, 'charge', 'POST', '/x', '\x00', '', gen_random_uuid(), 'charged', 'ref:filler-' || i, now(), now()
		FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `ANALYZE pgsaga_call, pgsaga_key`)
	require.NoError(t, err)
	rows, err := tx.Query(t.Context(), `EXPLAIN SELECT c.reference FROM pgsaga_call_journal c WHERE c.reference = ANY($1::text[])`, refs)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, strings.Join(plan, "\n"), "pgsaga_call_reference_idx", strings.Join(plan, "\n"))
	require.Contains(t, strings.Join(plan, "\n"), "pgsaga_key_call_reference_idx", strings.Join(plan, "\n"))
}
