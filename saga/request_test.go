package saga_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/google/uuid"
	"github.com/pgsaga/pgsaga/phases"
)

// Run and RunTx leave the caller's Request as it was: a caller may reuse it, send it again or
// read it from another goroutine.
func TestRunLeavesTheRequestAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(h *harness) []*phases.Operation {
		return []*phases.Operation{{Name: "record", Steps: []phases.Step{
			phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				return run.Respond(201, map[string]string{"ok": "yes"})
			}),
		}}}
	})
	for _, runTx := range []bool{false, true} {
		req := h.req(uuid.NewString(), `{"amount": 1}`)
		req.PathValues = map[string]string{"id": "42"}
		before := *req
		before.Body = slices.Clone(req.Body)
		before.PathValues = maps.Clone(req.PathValues)
		var err error
		if runTx {
			err = pgx.BeginFunc(t.Context(), h.db.Pool, func(tx pgx.Tx) error {
				_, err := h.client.RunTx(t.Context(), tx, "record", req)
				return err
			})
		} else {
			_, err = h.client.Run(t.Context(), "record", req)
		}
		require.NoError(t, err)
		require.Equal(t, before, *req, "RunTx=%v changed the caller's request", runTx)
	}
}
