package saga_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// settleable is reserveThenCharge with a settle hook: succeeded records the operator's reference
// and answers 201, failed releases the reservations and answers 402. A reference is required
// for succeeded.
func settleable(r *reserveThenCharge) func(h *harness) []*phases.Operation {
	return func(h *harness) []*phases.Operation {
		ops := r.ops(h)
		ops[0].Settle = func(ctx context.Context, tx pgx.Tx, run *phases.Run, s *phases.Settlement) error {
			if s.Outcome == phases.SettleSucceeded {
				if s.Reference == "" {
					return errors.New("a reference is required")
				}
				if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step, detail) VALUES ($1, 'settled', $2)`, run.Key(), s.Reference); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]string{"status": "booked", "by": s.By})
			}
			if _, err := tx.Exec(ctx, `UPDATE test_reservation SET status = 'released' WHERE key = $1`, run.Key()); err != nil {
				return err
			}
			return run.Respond(http.StatusPaymentRequired, map[string]string{"error": "payment_failed", "message": s.Note})
		}
		return ops
	}
}

func TestSettleAParkedKey(t *testing.T) {
	t.Parallel()
	for _, outcome := range []phases.SettleOutcome{phases.SettleSucceeded, phases.SettleFailed} {
		t.Run(string(outcome), func(t *testing.T) {
			t.Parallel()
			r := &reserveThenCharge{charge: func(*phases.Run) error { return phases.OutcomeUnknown(errors.New("nothing can tell")) }}
			h := newHarness(t, nil, settleable(r))
			key := "settle-" + newID()
			_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
			require.ErrorAs(t, err, new(*saga.ParkedError))

			params := &saga.SettleParams{Outcome: outcome, Note: "checked the provider's dashboard", Reference: "ch_42", By: "alice"}
			res, err := h.client.Settle(t.Context(), h.scope, key, params)
			require.NoError(t, err)
			k := h.key(key)
			require.Equal(t, saga.KeyStatusCompleted, k.Status)
			require.Empty(t, k.ParkedReason)
			require.Equal(t, res.Response.Body, k.Response.Body)
			require.Len(t, k.History, 1)
			a := k.History[0]
			require.Equal(t, saga.KeyActionSettle, a.Action)
			require.Equal(t, "alice", a.By)
			require.Equal(t, outcome, a.Outcome)
			require.Equal(t, "checked the provider's dashboard", a.Note)
			require.Equal(t, "ch_42", a.Reference)
			if outcome == phases.SettleSucceeded {
				require.Equal(t, http.StatusCreated, res.Response.Status)
				require.Equal(t, 1, h.effects(key, "settled"))
			} else {
				require.Equal(t, http.StatusPaymentRequired, res.Response.Status)
				require.Equal(t, 2, h.count(`SELECT count(*) FROM test_reservation WHERE key = $1 AND status = 'released'`, key))
			}

			// The client's retry replays the operator's answer.
			again, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
			require.NoError(t, err)
			require.True(t, again.Replayed)
			require.Equal(t, res.Response.Body, again.Response.Body)

			// Settling twice is refused: the key is no longer parked.
			_, err = h.client.Settle(t.Context(), h.scope, key, params)
			require.ErrorIs(t, err, &saga.RefusedError{Reason: saga.RefusedNotParked})
		})
	}
}

func TestSettleRefusals(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{charge: func(*phases.Run) error { return phases.OutcomeUnknown(errors.New("nothing can tell")) }}
	h := newHarness(t, nil, settleable(r))
	parkedKey := "settle-refused-" + newID()
	_, err := h.client.Run(t.Context(), opReserve, h.req(parkedKey, `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))

	good := &saga.SettleParams{Outcome: phases.SettleFailed, Note: "n", By: "alice"}
	for name, tc := range map[string]struct {
		key    string
		params *saga.SettleParams
		want   error
		text   string
	}{
		"no params":          {parkedKey, nil, nil, "SettleParams"},
		"unknown outcome":    {parkedKey, &saga.SettleParams{Outcome: "maybe", Note: "n", By: "a"}, nil, "Outcome"},
		"no note":            {parkedKey, &saga.SettleParams{Outcome: phases.SettleFailed, By: "a"}, nil, "Note"},
		"no operator":        {parkedKey, &saga.SettleParams{Outcome: phases.SettleFailed, Note: "n"}, nil, "By"},
		"no such key":        {"no-such-key-1", good, saga.ErrKeyNotFound, ""},
		"hook refuses":       {parkedKey, &saga.SettleParams{Outcome: phases.SettleSucceeded, Note: "n", By: "a"}, nil, "a reference is required"},
		"completed key":      {"", good, &saga.RefusedError{Reason: saga.RefusedNotParked}, ""},
		"operation w/o hook": {"", good, &saga.RefusedError{Reason: saga.RefusedNoSettleHook}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			key := tc.key
			client := h.client
			switch name {
			case "completed key":
				key = "settle-done-" + newID()
				ok := &reserveThenCharge{}
				client = h.newClient(nil, settleable(ok))
				_, err := client.Run(t.Context(), opReserve, h.req(key, `{}`))
				require.NoError(t, err)
			case "operation w/o hook":
				key = "settle-nohook-" + newID()
				client = h.newClient(nil, r.ops)
				_, err := client.Run(t.Context(), opReserve, h.req(key, `{}`))
				require.ErrorAs(t, err, new(*saga.ParkedError))
			}
			_, err := client.Settle(t.Context(), h.scope, key, tc.params)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			} else {
				require.ErrorContains(t, err, tc.text)
			}
		})
	}
	k := h.key(parkedKey)
	require.Equal(t, saga.KeyStatusParked, k.Status, "a refused settlement changes nothing")
	require.Empty(t, k.History)
	require.Zero(t, h.effects(parkedKey, "settled"))
}

// A refusal matches its own reason, or any refusal, and no other reason.
func TestRefusedErrorMatchesItsReason(t *testing.T) {
	t.Parallel()
	var err error = fmt.Errorf("settling: %w", &saga.RefusedError{Reason: saga.RefusedNotParked})
	require.ErrorIs(t, err, &saga.RefusedError{Reason: saga.RefusedNotParked})
	require.ErrorIs(t, err, &saga.RefusedError{})
	require.NotErrorIs(t, err, &saga.RefusedError{Reason: saga.RefusedNoSettleHook})
	require.Equal(t, "settling: the key is not parked: only a parked key can be settled", err.Error())

	hook := errors.New("a reference is required")
	err = &saga.RefusedError{Reason: saga.RefusedBySettleHook, Err: hook}
	require.ErrorIs(t, err, hook)
	require.Equal(t, "the settlement was refused: a reference is required", err.Error())
}
