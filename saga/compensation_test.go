package saga_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

const opReserve = "reserve_then_charge"

// reserveThenCharge holds two reservations (hold_seat, hold_meal: each compensated by releasing
// it), then calls charge, whose outcome the test decides, then records. A compensation records
// its run in test_effect ("release:<step>"), so each must appear exactly once.
type reserveThenCharge struct {
	// charge is the call's result: nil succeeds.
	charge func(run *phases.Run) error
	// record is the last phase's result: nil answers 201.
	record func(run *phases.Run) error
	// releaseFails makes the next n compensation attempts fail transiently after their writes.
	releaseFails atomic.Int32
}

func (r *reserveThenCharge) ops(*harness) []*phases.Operation {
	hold := func(step string) phases.Step {
		return phases.Atomic(step, func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			id := run.Key() + "/" + step
			if _, err := tx.Exec(ctx, `INSERT INTO test_reservation (id, key, status) VALUES ($1, $2, 'held')`, id, run.Key()); err != nil {
				return err
			}
			return phases.Value[string](step).Set(run, id)
		}).WithCompensation(func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			id, err := phases.Value[string](step).Get(run)
			if err != nil {
				return phases.Permanent(errors.New("compensation without the reservation's id"))
			}
			if _, err := tx.Exec(ctx, `UPDATE test_reservation SET status = 'released' WHERE id = $1`, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, $2)`, run.Key(), "release:"+step); err != nil {
				return err
			}
			if r.releaseFails.Add(-1) >= 0 {
				return errors.New("database hiccup while releasing")
			}
			return nil
		})
	}
	return []*phases.Operation{{
		Name: opReserve,
		Steps: []phases.Step{
			hold("hold_seat"),
			hold("hold_meal"),
			phases.Call("charge", func(ctx context.Context, run *phases.Run) error {
				if r.charge == nil {
					return nil
				}
				return r.charge(run)
			}),
			phases.Atomic("record", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, 'record')`, run.Key()); err != nil {
					return err
				}
				if r.record != nil {
					if err := r.record(run); err != nil {
						return err
					}
				}
				return run.Respond(http.StatusCreated, map[string]string{"status": "booked"})
			}),
		},
	}}
}

func declined(*phases.Run) error {
	return phases.Reject(http.StatusPaymentRequired, "card_declined", "the card was declined")
}

// requireReleasedOnce checks both reservations were released by exactly one committed
// compensation each, and that the record phase left nothing.
func requireReleasedOnce(t *testing.T, h *harness, key string) {
	t.Helper()
	require.Equal(t, 2, h.count(`SELECT count(*) FROM test_reservation WHERE key = $1 AND status = 'released'`, key))
	require.Equal(t, 1, h.effects(key, "release:hold_seat"))
	require.Equal(t, 1, h.effects(key, "release:hold_meal"))
	require.Zero(t, h.effects(key, "record"))
}

// requireReleaseOrder checks the compensations committed newest phase first.
func requireReleaseOrder(t *testing.T, h *harness, key string) {
	t.Helper()
	rows, err := h.db.Pool.Query(t.Context(), `SELECT step FROM test_effect WHERE key = $1 AND step LIKE 'release:%' ORDER BY at`, key)
	require.NoError(t, err)
	steps, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"release:hold_meal", "release:hold_seat"}, steps)
}

func TestCompensationOfARejection(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]*reserveThenCharge{
		"call rejects":  {charge: declined},
		"phase rejects": {record: declined},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, r.ops)
			key := "reject-" + newID()
			res, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
			require.NoError(t, err)
			require.Equal(t, http.StatusPaymentRequired, res.Response.Status)
			require.JSONEq(t, `{"type": "urn:pgsaga:error:card_declined", "title": "Card declined", "status": 402,
				"detail": "the card was declined", "error": "card_declined", "message": "the card was declined"}`, string(res.Response.Body))
			requireReleasedOnce(t, h, key)
			requireReleaseOrder(t, h, key)

			k := h.key(key)
			require.Equal(t, saga.KeyStatusCompleted, k.Status)
			require.Equal(t, "finished", k.RecoveryPoint)
			again, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, res.Response.Body, again.Response.Body)
			requireReleasedOnce(t, h, key)
		})
	}
}

func TestCompensationOfAPermanentFailureParks(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{charge: func(*phases.Run) error { return phases.Permanent(errors.New("card number is malformed")) }}
	h := newHarness(t, nil, r.ops)
	key := "permanent-" + newID()
	_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))
	requireReleasedOnce(t, h, key)

	k := h.key(key)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Contains(t, k.LastError, "card number is malformed")
	require.Nil(t, k.Response)
	_, err = h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))
	requireReleasedOnce(t, h, key)
}

// TestCompensationAcrossCrashes stops the compensations part-way, in every way, and continues
// the key: each reservation is released by exactly one committed compensation, the newer one
// first, and the decided outcome is stored once.
func TestCompensationAcrossCrashes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		arm  func(h *harness, r *reserveThenCharge)
		// transient is true when the first execution returns a transient error instead of dying.
		transient bool
		// rp is the key's recovery point after the first execution.
		rp string
	}{
		{"outcome stored, no compensation begun", func(h *harness, _ *reserveThenCharge) {
			h.points.Crash(chaos.BeforeCompensation(opReserve, "hold_meal"))
		}, false, "compensate:hold_meal"},
		{"first compensation done, not committed", func(h *harness, _ *reserveThenCharge) {
			h.points.Crash(chaos.AfterCompensation(opReserve, "hold_meal"))
		}, false, "compensate:hold_meal"},
		{"first compensation committed", func(h *harness, _ *reserveThenCharge) {
			h.points.Crash(chaos.BeforeCompensation(opReserve, "hold_seat"))
		}, false, "compensate:hold_seat"},
		{"last compensation done, not committed", func(h *harness, _ *reserveThenCharge) {
			h.points.Crash(chaos.AfterCompensation(opReserve, "hold_seat"))
		}, false, "compensate:hold_seat"},
		{"first compensation fails transiently", func(_ *harness, r *reserveThenCharge) {
			r.releaseFails.Store(1)
		}, true, "compensate:hold_meal"},
	}
	for _, how := range []string{"client retry", "resume"} {
		for _, tc := range cases {
			t.Run(how+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				r := &reserveThenCharge{charge: declined}
				h := newHarness(t, nil, r.ops)
				key := "compensate-" + newID()
				tc.arm(h, r)
				var err error
				crashed := crash.Run(func() { _, err = h.client.Run(t.Context(), opReserve, h.req(key, `{}`)) })
				require.Equal(t, !tc.transient, crashed)
				require.Empty(t, h.points.Pending())
				k := h.key(key)
				require.Equal(t, saga.KeyStatusStarted, k.Status)
				require.Equal(t, tc.rp, k.RecoveryPoint)
				require.Nil(t, k.Response, "nothing is answered before the compensations are done")
				if tc.transient {
					var transient *saga.TransientError
					require.ErrorAs(t, err, &transient)
					require.False(t, k.Leased, "a transient failure gives the lease back early")
					h.makeDue(key)
				} else {
					h.expireLease(key)
				}

				var res *saga.Result
				if how == "resume" {
					res, err = h.client.Resume(t.Context(), h.scope, key, nil)
				} else {
					res, err = h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
				}
				require.NoError(t, err)
				require.Equal(t, http.StatusPaymentRequired, res.Response.Status)
				require.True(t, res.Resumed)
				requireReleasedOnce(t, h, key)
				requireReleaseOrder(t, h, key)

				k = h.key(key)
				require.Equal(t, saga.KeyStatusCompleted, k.Status)
				again, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
				require.NoError(t, err)
				require.True(t, again.Replayed)
				require.Equal(t, res.Response.Body, again.Response.Body)
				requireReleasedOnce(t, h, key)
			})
		}
	}
}
