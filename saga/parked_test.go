package saga_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestResumingACompensatedKeyRepeatsNoCompensation: a permanent failure after two phases with
// undos runs both undos and parks the key. An operator's resume must not run the last undo again
// (a second refund, a reservation released twice): the key parks at recovery point
// "compensated", and every resume leaves the compensations as they are.
func TestResumingACompensatedKeyRepeatsNoCompensation(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{charge: func(*phases.Run) error { return phases.Permanent(errors.New("card number is malformed")) }}
	h := newHarness(t, nil, r.ops)
	key := "compensated-" + newID()
	_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	var parked *saga.ParkedError
	require.ErrorAs(t, err, &parked)
	require.Equal(t, saga.ParkedPermanent, parked.Reason)
	requireReleasedOnce(t, h, key)
	k := h.key(key)
	require.Equal(t, phases.RecoveryPointCompensated, k.RecoveryPoint)
	require.Equal(t, saga.ParkedPermanent, k.ParkedReason)

	for range 3 {
		_, err = h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{Parked: true, By: "ops"})
		require.ErrorAs(t, err, &parked, "a compensated key parks again")
		require.Equal(t, saga.ParkedPermanent, parked.Reason)
		requireReleasedOnce(t, h, key)
	}
	k = h.key(key)
	require.Len(t, k.History, 3)
	for _, a := range k.History {
		require.Equal(t, saga.KeyActionResume, a.Action)
		require.Equal(t, "ops", a.By)
	}
}

// TestResumeMidCompensationRunsEachUndoOnce: a key parked while its compensations were under way
// (its attempts ran out on a failing undo) is resumed by an operator: only the undo that did not
// commit runs.
func TestResumeMidCompensationRunsEachUndoOnce(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{charge: declined}
	r.releaseFails.Store(1) // the first undo (hold_meal) fails once, after its writes
	h := newHarness(t, &saga.Config{MaxAttempts: 1}, r.ops)
	key := "mid-compensation-" + newID()
	_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	var parked *saga.ParkedError
	require.ErrorAs(t, err, &parked)
	require.Equal(t, saga.ParkedAttemptsExhausted, parked.Reason)
	k := h.key(key)
	require.Equal(t, "compensate:hold_meal", k.RecoveryPoint)
	require.Zero(t, h.effects(key, "release:hold_meal"), "the failed undo rolled back")

	res, err := h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{Parked: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusPaymentRequired, res.Response.Status)
	requireReleasedOnce(t, h, key)
	requireReleaseOrder(t, h, key)
	_, err = h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{Parked: true})
	require.NoError(t, err, "a completed key answers its stored response")
	requireReleasedOnce(t, h, key)
}

// TestUnknownOutcomeParksWithoutCompensating: a call whose effect may have happened and cannot be
// resolved (gateway.ErrCannotResolve, ErrKeyExpired) must not be compensated as if it had failed
// — the reservation released although the money may have moved. It parks with outcome_unknown
// and runs no compensation.
func TestUnknownOutcomeParksWithoutCompensating(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{charge: func(*phases.Run) error {
		return phases.OutcomeUnknown(errors.New("the provider has neither inquiry nor idempotency keys"))
	}}
	h := newHarness(t, nil, r.ops)
	key := "unknown-" + newID()
	_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	var parked *saga.ParkedError
	require.ErrorAs(t, err, &parked)
	require.Equal(t, saga.ParkedOutcomeUnknown, parked.Reason)

	require.Zero(t, h.count(`SELECT count(*) FROM test_reservation WHERE key = $1 AND status = 'released'`, key), "nothing was compensated")
	require.Zero(t, h.count(`SELECT count(*) FROM test_effect WHERE key = $1 AND step LIKE 'release:%'`, key))
	k := h.key(key)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, saga.ParkedOutcomeUnknown, k.ParkedReason)
	require.Equal(t, "hold_meal", k.RecoveryPoint, "the key stays where the call was, for an operator to settle")
	require.Len(t, k.Calls, 1)
	require.Equal(t, phases.CallOutcomeUnknown, k.Calls[0].Outcome)
	require.NotNil(t, k.Calls[0].EndedAt)
}

// TestPendingCallSpendsNoAttempts: a call answered "pending" waits (a transient failure with a
// delay) as often as it takes, without spending the attempt budget; once final, the key
// finishes.
func TestPendingCallSpendsNoAttempts(t *testing.T) {
	t.Parallel()
	polls := 0
	r := &reserveThenCharge{charge: func(run *phases.Run) error {
		polls++
		if polls <= 4 {
			run.RecordCall(phases.CallOutcomePending, "ch_1")
			return phases.RetryAfter(time.Hour, errors.New("the charge is pending"))
		}
		run.RecordCall(phases.CallOutcomeSucceeded, "ch_1")
		return nil
	}}
	h := newHarness(t, &saga.Config{MaxAttempts: 2}, r.ops)
	key := "pending-" + newID()
	for range 4 {
		_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
		var transient *saga.TransientError
		require.ErrorAs(t, err, &transient)
		require.InDelta(t, time.Hour.Seconds(), transient.RetryAfter.Seconds(), 5)
		require.Equal(t, saga.KeyStatusStarted, h.key(key).Status, "a pending call never parks for attempts")
		h.makeDue(key)
	}
	res, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	k := h.key(key)
	require.Equal(t, 5, k.Attempts)
	require.Len(t, k.Calls, 5)
	for i, c := range k.Calls[:4] {
		require.Equal(t, phases.CallOutcomePending, c.Outcome, "attempt %d", i+1)
		require.Equal(t, "ch_1", c.ProviderID)
	}
	require.Equal(t, phases.CallOutcomeSucceeded, k.Calls[4].Outcome)
	for _, c := range k.Calls[1:] {
		require.True(t, c.Attempt > 1)
	}
}

// TestPoisonKeyParks: a key whose every execution dies (the goroutine ends at
// the call, as a killed process would) was claimed forever: the claim did not count attempts.
// After MaxAttempts executions, the next claim parks it without running anything.
func TestPoisonKeyParks(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{}
	h := newHarness(t, &saga.Config{MaxAttempts: 3}, r.ops)
	key := "poison-" + newID()
	for attempt := 1; attempt <= 3; attempt++ {
		h.points.Crash(chaos.BeforeStep(opReserve, "charge"))
		crashed := crash.Run(func() {
			if attempt == 1 {
				_, _ = h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
			} else {
				_, _ = h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{Due: true})
			}
		})
		require.True(t, crashed, "attempt %d dies", attempt)
		require.Equal(t, attempt, h.key(key).Attempts)
		h.expireLease(key)
	}
	before := h.points.Hits(chaos.BeforeStep(opReserve, "charge"))
	_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	var parked *saga.ParkedError
	require.ErrorAs(t, err, &parked)
	require.Equal(t, saga.ParkedAttemptsExhausted, parked.Reason)
	require.Equal(t, before, h.points.Hits(chaos.BeforeStep(opReserve, "charge")), "the parking claim runs nothing")
	k := h.key(key)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, "hold_meal", k.RecoveryPoint)
	require.Len(t, k.Calls, 3, "each dead execution journaled its call")
	for _, c := range k.Calls {
		require.Empty(t, c.Outcome, "a call whose execution died has no outcome")
	}
}

// TestOldKeysPark: a started key older than MaxAge is parked at its next execution.
func TestOldKeysPark(t *testing.T) {
	t.Parallel()
	r := &reserveThenCharge{}
	h := newHarness(t, nil, r.ops)
	key := "old-" + newID()
	h.points.Crash(chaos.BeforeStep(opReserve, "charge"))
	require.True(t, crash.Run(func() { _, _ = h.client.Run(t.Context(), opReserve, h.req(key, `{}`)) }))
	_, err := h.db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET created_at = now() - interval '8 days', locked_until = now() WHERE key = $1`, key)
	require.NoError(t, err)
	_, err = h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
	var parked *saga.ParkedError
	require.ErrorAs(t, err, &parked)
	require.Equal(t, saga.ParkedAttemptsExhausted, parked.Reason)
	require.Contains(t, parked.LastError, "MaxAge")
}
