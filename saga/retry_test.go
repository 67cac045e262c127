package saga_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
)

const opClaimFirst = "claim_first"

// claimFirst's first phase inserts into a table keyed by the idempotency key: like any phase
// with a natural unique key, it cannot run twice for one key.
func claimFirst(h *harness) []*phases.Operation {
	return []*phases.Operation{{
		Name: opClaimFirst,
		Steps: []phases.Step{
			phases.Atomic("claimed", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				_, err := tx.Exec(ctx, `INSERT INTO test_claim (key) VALUES ($1)`, run.Key())
				return err
			}),
			phases.Call("call", func(ctx context.Context, run *phases.Run) error {
				return phases.Value[string]("receipt").Set(run, h.ext.apply(run.Key(), mayHaveReached(run)))
			}),
			phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
			}),
		},
	}}
}

// TestRetryTakesOverWhateverTheFirstPhase: a client retry of a started key whose lease expired
// takes the key over and finishes it, even when the operation's first phase cannot run twice
// (here a unique violation, which is not a business outcome): the retry must not run that phase
// again, or at least must not let its failure hide the key, and must take it over as Resume does.
func TestRetryTakesOverWhateverTheFirstPhase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, claimFirst)
	key := "claim-first-" + newID()
	h.points.Crash(chaos.BeforeStep(opClaimFirst, "call"))
	require.True(t, crash.Run(func() { _, _ = h.client.Run(t.Context(), opClaimFirst, h.req(key, `{}`)) }))
	require.Equal(t, "claimed", h.key(key).RecoveryPoint)
	h.expireLease(key)

	res, err := h.client.Run(t.Context(), opClaimFirst, h.req(key, `{}`))
	require.NoError(t, err, "a retry of a key nobody holds must resume it, not answer in-progress until the worker comes")
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.True(t, res.Resumed)
	require.True(t, h.ext.acted(key))
}
