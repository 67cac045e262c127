package saga_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

const opDivide = "divide"

// divideOps: a claim, a call, then a phase whose business statement divides by the request's
// "by" (0 is the client's mistake: the database refuses it, SQLSTATE 22012) — or, with "quiet",
// sends no statement at all.
func divideOps(h *harness) []*phases.Operation {
	return []*phases.Operation{{Name: opDivide, Steps: []phases.Step{
		phases.Atomic("claimed", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
		phases.Call("called", func(context.Context, *phases.Run) error { return nil }),
		phases.Atomic("divided", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			switch string(run.Body()) {
			case `{"quiet":true}`:
			case `{"by":0}`:
				var n int
				if err := tx.QueryRow(ctx, `SELECT 1 / $1::int`, 0).Scan(&n); err != nil {
					return err
				}
			default:
				if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, 'divided')`, run.Key()); err != nil {
					return err
				}
			}
			return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
		}),
	}}}
}

// The fenced write of a key whose lease was taken over matches no row and raises, so that the
// COMMIT behind it never runs. That error must never reach the client as its own mistake (400
// invalid_request, which the database's refusals of business data become): the zombie answers
// from the key as the other execution left it, whether its phase sent statements (the fence
// inside the phase's transaction) or none (the write alone). A business statement's division by
// zero, by contrast, is the client's data: 400, stored.
func TestLostLeaseIsNeverAnsweredAsInvalidRequest(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"by":1}`, `{"quiet":true}`} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, divideOps)
			key := "fence-" + newID()
			gate := h.points.Block(chaos.AfterStep(opDivide, "divided"))
			var (
				res *saga.Result
				err error
			)
			a := crash.Start(func() { res, err = h.client.Run(t.Context(), opDivide, h.req(key, body)) })
			<-gate.Reached()
			h.expireLease(key)
			other, resumeErr := h.newClient(nil, divideOps).Resume(t.Context(), h.scope, key, nil)
			require.NoError(t, resumeErr)
			require.Equal(t, http.StatusCreated, other.Response.Status)
			gate.Release()
			require.False(t, a.Wait())

			var invalid *saga.InvalidRequestError
			require.False(t, errors.As(err, &invalid), "a lost lease answered as the client's mistake: %v", err)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.Response.Status)
			require.False(t, res.Replayed)
			if body == `{"by":1}` {
				require.Equal(t, 1, h.effects(key, "divided"), "the zombie's phase committed nothing")
			}
		})
	}

	// A completion that goes alone (its phase sent no statement) does not raise when its lease
	// was taken over: it matches no row and commits nothing by itself, and that is the fence. The
	// zombie answers from the key at once: its completion, then the read, and no release.
	t.Run("a completion alone finds no row", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil, divideOps)
		counter := &chaos.Counter{}
		pool, err := chaos.CountingPool(t.Context(), h.db.URL, 4, counter)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		zombie, err := saga.NewClient(&saga.Config{DB: pool, Operations: chaos.WrapOperations(divideOps(h), h.points)})
		require.NoError(t, err)
		key := "alone-" + newID()
		gate := h.points.Block(chaos.AfterStep(opDivide, "divided"))
		var res *saga.Result
		a := crash.Start(func() { res, err = zombie.Run(t.Context(), opDivide, h.req(key, `{"quiet":true}`)) })
		<-gate.Reached()
		h.expireLease(key)
		_, resumeErr := h.newClient(nil, divideOps).Resume(t.Context(), h.scope, key, nil)
		require.NoError(t, resumeErr)
		counter.Take()
		gate.Release()
		require.False(t, a.Wait())
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, res.Response.Status)
		require.False(t, res.Replayed)
		requireTripsLike(t, counter.Take(), "UPDATE pgsaga_key SET status = 'completed'", "SELECT operation, method, path")
		require.Equal(t, 1, h.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND call_outcome IS NULL AND attempts = 2`, key),
			"the zombie recorded nothing of its call")
	})

	t.Run("division by zero in the business statement", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, nil, divideOps)
		key := "divide-" + newID()
		res, err := h.client.Run(t.Context(), opDivide, h.req(key, `{"by":0}`))
		require.NoError(t, err, "stored like a rejection once a phase committed")
		require.Equal(t, http.StatusBadRequest, res.Response.Status)
		require.Contains(t, string(res.Response.Body), saga.CodeInvalidRequest)
		require.Equal(t, saga.KeyStatusCompleted, h.key(key).Status)
	})
}
