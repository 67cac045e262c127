package saga_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// holdForReview writes the order's status and answers 409 price_changed with the current price:
// an error answered while the phase's writes commit.
func holdForReview(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
	if _, err := tx.Exec(ctx, `INSERT INTO effects (key, what) VALUES ($1, 'held')`, run.Key()); err != nil {
		return err
	}
	return run.RespondError(http.StatusConflict, "price_changed", "the price changed; the order is held for review",
		map[string]any{"current_price": 1350, "order_id": run.IntentID("ord")})
}

// A phase that answers an error with RespondError keeps its writes: the key completes with a
// problem details body carrying the fields, stored and replayed byte for byte. Alone in its
// operation (one transaction with the claim) and as the last phase after a call.
func TestRespondErrorKeepsThePhasesWrites(t *testing.T) {
	t.Parallel()
	singleTx := &phases.Operation{Name: "hold_single", Steps: []phases.Step{phases.Atomic("held", holdForReview)}}
	phased := &phases.Operation{Name: "hold_phased", Steps: []phases.Step{
		phases.Atomic("checked", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
		phases.Call("asked", func(context.Context, *phases.Run) error { return nil }),
		phases.Atomic("held", holdForReview),
	}}
	c, db := newClient(t, singleTx, phased)
	for _, op := range []string{"hold_single", "hold_phased"} {
		key := uuid.NewString()
		res, err := c.Run(t.Context(), op, request(key))
		require.NoError(t, err, op)
		require.Equal(t, http.StatusConflict, res.Response.Status, op)
		require.Equal(t, []string{"application/problem+json"}, res.Response.Header["Content-Type"], op)
		orderID := phases.IntentID("t1", "a1", key, "ord")
		require.Equal(t, `{"type":"urn:pgsaga:error:price_changed","title":"Price changed","status":409,`+
			`"detail":"the price changed; the order is held for review","error":"price_changed",`+
			`"message":"the price changed; the order is held for review","current_price":1350,"order_id":"`+orderID+`"}`,
			string(res.Response.Body), op)
		require.Equal(t, 1, countEffects(t, db, key), "%s: the phase's write committed with the answer", op)

		k, err := c.KeyGet(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key)
		require.NoError(t, err)
		require.Equal(t, saga.KeyStatusCompleted, k.Status, op)

		again, err := c.Run(t.Context(), op, request(key))
		require.NoError(t, err)
		require.True(t, again.Replayed, op)
		require.Equal(t, res.Response.Body, again.Response.Body, "%s: replayed byte for byte", op)
		require.Equal(t, 1, countEffects(t, db, key), "%s: a replay writes nothing", op)
	}
}
