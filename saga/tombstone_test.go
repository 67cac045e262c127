package saga_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// The operations a retry after retention must never run again: one of a single transaction,
// one phased around a call, one whose first step is the call (its claim journals it, outside
// any phase), and one that fails permanently before any phase (its claim parks the key).
const (
	opNote      = "note"
	opNotify    = "notify"
	opSend      = "send"
	opRefuse    = "refuse"
	gcBatchSize = 3
)

type expiringOps struct {
	calls atomic.Int32 // calls made, of every operation
}

func (o *expiringOps) ops(*harness) []*phases.Operation {
	effect := func(step string) phases.Step {
		return phases.Atomic(step, func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, $2)`, run.Key(), step)
			if err != nil {
				return err
			}
			if step == "recorded" || step == "noted" {
				return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
			}
			return nil
		})
	}
	call := phases.Call("sent", func(ctx context.Context, run *phases.Run) error {
		o.calls.Add(1)
		return nil
	})
	respond := phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
		return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
	})
	return []*phases.Operation{
		{Name: opNote, Steps: []phases.Step{effect("noted")}},
		{Name: opNotify, Steps: []phases.Step{effect("reserved"), call, effect("recorded")}},
		{Name: opSend, Steps: []phases.Step{call, respond}},
		{Name: opRefuse, Steps: []phases.Step{phases.Call("refused", func(ctx context.Context, run *phases.Run) error {
			o.calls.Add(1)
			return phases.Permanent(errors.New("the provider refuses this for good"))
		})}},
	}
}

// gcAll deletes every completed key, leaving their tombstones.
func gcAll(t *testing.T, h *harness) int {
	t.Helper()
	zero := time.Duration(0)
	n, err := h.client.KeyDeleteExpired(t.Context(), &saga.KeyDeleteExpiredParams{OlderThan: &zero, BatchSize: gcBatchSize})
	require.NoError(t, err)
	return n
}

// After GC, the same request again is 410 and runs nothing, stores nothing, under every
// operation's shape; another request under that key is 422; the same key in another scope is
// new.
func TestARetryAfterRetentionIsExpiredAndNeverRuns(t *testing.T) {
	t.Parallel()
	o := &expiringOps{}
	h := newHarness(t, nil, o.ops)
	ctx := t.Context()
	keys := map[string]string{}
	for _, op := range []string{opNote, opNotify, opSend} {
		keys[op] = uuid.NewString()
		res, err := h.client.Run(ctx, op, h.req(keys[op], `{"n":1}`))
		require.NoError(t, err, op)
		require.Equal(t, http.StatusCreated, res.Response.Status, op)
	}
	require.Equal(t, 3, gcAll(t, h))
	require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_key`))
	require.Equal(t, 3, h.count(`SELECT count(*) FROM pgsaga_key_tombstone`))
	calls, effects := o.calls.Load(), h.count(`SELECT count(*) FROM test_effect`)

	for op, key := range keys {
		_, err := h.client.Run(ctx, op, h.req(key, `{"n":1}`))
		var expired *saga.KeyExpiredError
		require.ErrorAs(t, err, &expired, op)
		require.WithinDuration(t, time.Now(), expired.CompletedAt, time.Minute, op)

		_, err = h.client.Run(ctx, op, h.req(key, `{"n":2}`))
		require.ErrorIs(t, err, saga.ErrKeyReused, "%s: another body under the expired key", op)
		other := opNote
		if op == opNote {
			other = opNotify
		}
		_, err = h.client.Run(ctx, other, h.req(key, `{"n":1}`))
		require.ErrorIs(t, err, saga.ErrKeyReused, "%s: another operation under the expired key", op)
	}
	require.Equal(t, calls, o.calls.Load(), "no call was made again")
	require.Equal(t, effects, h.count(`SELECT count(*) FROM test_effect`), "no phase committed again")
	require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_key`), "nothing was stored")

	// An operation whose first step fails for good parks the key as its claim: refused too.
	parkKey := uuid.NewString()
	_, err := h.client.Run(ctx, opRefuse, h.req(parkKey, `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))
	_, err = h.db.Pool.Exec(ctx, `INSERT INTO pgsaga_key_tombstone (tenant_id, actor_id, key_hash, operation, request_digest, completed_at, expires_at)
		VALUES ($1, $2, pgsaga_key_hash($3), $4, pgsaga_request_digest('POST', '/test', '\x00'), now(), now() + interval '1 day')`,
		h.scope.Tenant, h.scope.Actor, "refused-"+parkKey, opRefuse)
	require.NoError(t, err)
	_, err = h.client.Run(ctx, opRefuse, h.req("refused-"+parkKey, `{}`))
	require.ErrorIs(t, err, saga.ErrKeyReused, "a tombstone of another request under the key")
	require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, "refused-"+parkKey))

	// Another actor's key of the same name is another key.
	other := *h.req(keys[opNote], `{"n":1}`)
	other.Scope.Actor = "bob"
	res, err := h.client.Run(ctx, opNote, &other)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
}

// Through the HTTP handler: 410 idempotency_key_expired, a problem body, no replay header.
func TestExpiredKeyOverHTTP(t *testing.T) {
	t.Parallel()
	o := &expiringOps{}
	h := newHarness(t, nil, o.ops)
	scope := func(*http.Request) (saga.Scope, error) { return h.scope, nil }
	handler, err := h.client.Handler(opNote, &saga.HandlerOpts{Scope: scope})
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	key := uuid.NewString()
	post := func() *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/test", strings.NewReader(`{"n":1}`))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	require.Equal(t, http.StatusCreated, post().StatusCode)
	gcAll(t, h)
	resp := post()
	require.Equal(t, http.StatusGone, resp.StatusCode)
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Empty(t, resp.Header.Get(saga.HeaderReplayed))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), `"error":"idempotency_key_expired"`)
	require.Equal(t, 1, h.count(`SELECT count(*) FROM test_effect`), "the phase did not commit again")
}

// A request during GC's transaction reads its key, still there until GC commits: a replay.
// Once GC commits, the same request meets the tombstone. A rollback leaves the key. Nothing runs
// again.
func TestARequestDuringRetentionNeverRunsTwice(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{true, false} {
		o := &expiringOps{}
		h := newHarness(t, nil, o.ops)
		ctx := t.Context()
		for _, op := range []string{opNote, opNotify, opSend} {
			key := uuid.NewString()
			_, err := h.client.Run(ctx, op, h.req(key, `{"n":1}`))
			require.NoError(t, err)
			calls, effects := o.calls.Load(), h.count(`SELECT count(*) FROM test_effect`)

			tx, err := h.db.Pool.Begin(ctx)
			require.NoError(t, err)
			zero := time.Duration(0)
			_, err = h.client.KeyDeleteExpiredTx(ctx, tx, &saga.KeyDeleteExpiredParams{OlderThan: &zero})
			require.NoError(t, err)
			res, err := h.client.Run(ctx, op, h.req(key, `{"n":1}`))
			require.NoError(t, err, op)
			require.True(t, res.Replayed, "%s: GC has not committed", op)
			if commit {
				require.NoError(t, tx.Commit(ctx))
				_, err = h.client.Run(ctx, op, h.req(key, `{"n":1}`))
				require.ErrorAs(t, err, new(*saga.KeyExpiredError), op)
			} else {
				require.NoError(t, tx.Rollback(ctx))
				res, err = h.client.Run(ctx, op, h.req(key, `{"n":1}`))
				require.NoError(t, err, op)
				require.True(t, res.Replayed, op)
			}
			require.Equal(t, calls, o.calls.Load(), "%s: no call was made again", op)
			require.Equal(t, effects, h.count(`SELECT count(*) FROM test_effect`), "%s: no phase committed again", op)
		}
	}
}

// The tombstone check of a claim that met a key GC was deleting: the claim's snapshot is taken
// before it waits for GC, so it holds the key and not the tombstone. Every claim statement of the
// key store reads both and, once GC commits and the row goes in, refuses; a check of the
// tombstone alone in that snapshot (the control) lets the key be stored again. The engine reads
// the key before it claims, so this race needs a claim that read the key before GC began and
// claims while GC holds it.
func TestTheTombstoneCheckSeesAKeyGCDeletedAfterTheSnapshot(t *testing.T) {
	t.Parallel()
	o := &expiringOps{}
	h := newHarness(t, nil, o.ops)
	ctx := t.Context()
	hash := []byte{0}
	token := pgtype.UUID{Bytes: uuid.New(), Valid: true}
	claims := []struct {
		name  string
		claim func(q *keystore.Queries, key string) error
		// refused: the claim must be refused once GC commits.
		refused bool
	}{
		{name: "ClaimCompleted", refused: true, claim: func(q *keystore.Queries, key string) error {
			return q.ClaimCompleted(ctx, &keystore.ClaimCompletedParams{TenantID: h.scope.Tenant, ActorID: h.scope.Actor,
				Key: key, Operation: opNote, Method: "POST", Path: "/test", RequestHash: hash, State: []byte(`{}`),
				ResponseStatus: 201, ResponseBody: []byte(`{}`), RetentionMs: 1000, LeaseToken: token})
		}},
		{name: "ClaimCompletedOrNothing", refused: true, claim: func(q *keystore.Queries, key string) error {
			_, err := q.ClaimCompletedOrNothing(ctx, &keystore.ClaimCompletedOrNothingParams{TenantID: h.scope.Tenant,
				ActorID: h.scope.Actor, Key: key, Operation: opNote, Method: "POST", Path: "/test", RequestHash: hash,
				State: []byte(`{}`), ResponseStatus: 201, ResponseBody: []byte(`{}`), RetentionMs: 1000, LeaseToken: token})
			return err
		}},
		{name: "ClaimStarted", refused: true, claim: func(q *keystore.Queries, key string) error {
			_, err := q.ClaimStarted(ctx, &keystore.ClaimStartedParams{TenantID: h.scope.Tenant, ActorID: h.scope.Actor,
				Key: key, Operation: opNote, Method: "POST", Path: "/test", RequestHash: hash, RequestBody: []byte(`{}`),
				RecoveryPoint: "started", State: []byte(`{}`), LeaseToken: token, LeaseMs: 1000})
			return err
		}},
		{name: "ClaimStartedJournal", refused: true, claim: func(q *keystore.Queries, key string) error {
			_, err := q.ClaimStartedJournal(ctx, &keystore.ClaimStartedJournalParams{TenantID: h.scope.Tenant,
				ActorID: h.scope.Actor, Key: key, Operation: opNote, Method: "POST", Path: "/test", RequestHash: hash,
				RequestBody: []byte(`{}`), RecoveryPoint: "started", State: []byte(`{}`), LeaseToken: token, LeaseMs: 1000,
				CallStep: "sent", CallMaxInFlightMs: 1000})
			return err
		}},
		{name: "ClaimStartedJournalOrNothing", refused: true, claim: func(q *keystore.Queries, key string) error {
			_, err := q.ClaimStartedJournalOrNothing(ctx, &keystore.ClaimStartedJournalOrNothingParams{TenantID: h.scope.Tenant,
				ActorID: h.scope.Actor, Key: key, Operation: opNote, Method: "POST", Path: "/test", RequestHash: hash,
				RequestBody: []byte(`{}`), RecoveryPoint: "started", State: []byte(`{}`), LeaseToken: token, LeaseMs: 1000,
				CallStep: "sent", CallMaxInFlightMs: 1000})
			return err
		}},
		{name: "ClaimParkedOrNothing", refused: true, claim: func(q *keystore.Queries, key string) error {
			_, err := q.ClaimParkedOrNothing(ctx, &keystore.ClaimParkedOrNothingParams{TenantID: h.scope.Tenant,
				ActorID: h.scope.Actor, Key: key, Operation: opNote, Method: "POST", Path: "/test", RequestHash: hash,
				RecoveryPoint: "started", State: []byte(`{}`), LastError: "refused", ParkedReason: "permanent", LeaseToken: token})
			return err
		}},
		{name: "the control: the tombstone alone, in the snapshot", claim: func(q *keystore.Queries, key string) error {
			_, err := h.db.Pool.Exec(ctx, `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
				request_hash, request_body, status, recovery_point, response_status, response_body, completed_at, expires_at)
			SELECT $1, $2, $3, 'note', 'POST', '/test', '\x00', '', 'completed', 'finished', 201, '', now(), now() + interval '1 day'
			WHERE NOT EXISTS (SELECT FROM pgsaga_key_tombstone WHERE tenant_id = $1 AND actor_id = $2 AND key_hash = pgsaga_key_hash($3))`,
				h.scope.Tenant, h.scope.Actor, key)
			return err
		}},
	}
	for _, tc := range claims {
		key := uuid.NewString()
		_, err := h.client.Run(ctx, opNote, h.req(key, `{"n":1}`))
		require.NoError(t, err)
		gc, err := h.db.Pool.Begin(ctx)
		require.NoError(t, err)
		zero := time.Duration(0)
		_, err = h.client.KeyDeleteExpiredTx(ctx, gc, &saga.KeyDeleteExpiredParams{OlderThan: &zero})
		require.NoError(t, err)

		claimed := make(chan error, 1)
		go func() { claimed <- tc.claim(keystore.New(h.db.Pool), key) }()
		require.Eventually(t, func() bool {
			return h.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`) > 0
		}, 10*time.Second, 5*time.Millisecond, "%s: the claim waits for GC's deletion", tc.name)
		require.NoError(t, gc.Commit(ctx))
		err = <-claimed
		stored := h.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key)
		if tc.refused {
			require.ErrorContains(t, err, "PGS02", tc.name)
			require.Zero(t, stored, tc.name)
		} else {
			require.NoError(t, err, tc.name)
			require.Equal(t, 1, stored, "%s: the race a snapshot check loses", tc.name)
		}
	}
}

// A tombstone lives for its window from the key's completion: within it the key is expired,
// after it the key is new again (the retry runs), and the next GC deletes it.
func TestTombstonesExpireInBulk(t *testing.T) {
	t.Parallel()
	o := &expiringOps{}
	h := newHarness(t, nil, o.ops)
	ctx := t.Context()
	var keys []string
	for range 2*gcBatchSize + 1 {
		key := uuid.NewString()
		keys = append(keys, key)
		_, err := h.client.Run(ctx, opNote, h.req(key, `{"n":1}`))
		require.NoError(t, err)
	}
	zero := time.Duration(0)
	_, err := h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: &zero, TombstoneRetention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, len(keys), h.count(`SELECT count(*) FROM pgsaga_key_tombstone WHERE expires_at > now() + interval '59 minutes'`))

	// Their window passes (as if an hour went by).
	_, err = h.db.Pool.Exec(ctx, `UPDATE pgsaga_key_tombstone SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
	res, err := h.client.Run(ctx, opNote, h.req(keys[0], `{"n":1}`))
	require.NoError(t, err, "past its tombstone's window, the key is new")
	require.False(t, res.Replayed)
	require.Equal(t, len(keys)+1, h.count(`SELECT count(*) FROM test_effect`))

	n, err := h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{BatchSize: gcBatchSize})
	require.NoError(t, err)
	require.Zero(t, n, "the new key is within its retention")
	require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_key_tombstone`), "expired tombstones go in bulk")

	// A key whose completion is older than the tombstone window leaves none.
	_, err = h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: &zero, TombstoneRetention: time.Nanosecond})
	require.NoError(t, err)
	require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_key_tombstone`))

	_, err = h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{TombstoneRetention: -time.Hour})
	require.ErrorContains(t, err, "TombstoneRetention")
}

// RunTx claims in the caller's transaction: a tombstone is met there too, and the caller's
// transaction stays usable.
func TestRunTxMeetsTheTombstone(t *testing.T) {
	t.Parallel()
	o := &expiringOps{}
	h := newHarness(t, nil, o.ops)
	ctx := t.Context()
	key := uuid.NewString()
	_, err := h.client.Run(ctx, opNote, h.req(key, `{"n":1}`))
	require.NoError(t, err)
	gcAll(t, h)

	tx, err := h.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = h.client.RunTx(ctx, tx, opNote, h.req(key, `{"n":1}`))
	require.ErrorAs(t, err, new(*saga.KeyExpiredError))
	var one int
	require.NoError(t, tx.QueryRow(ctx, `SELECT 1`).Scan(&one), "the caller's transaction is still usable")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 1, h.count(`SELECT count(*) FROM test_effect`), "the phase did not commit again")
}

// A caller's transaction in REPEATABLE READ (or SERIALIZABLE) reads in one snapshot, taken at
// its first statement: a GC that commits after it leaves the tombstone out of that snapshot,
// and the key in it. RunTx's claim goes in (no live key conflicts), and the probe of the key in
// its snapshot refuses it: nothing is stored, the phase does not run again. The tombstone, which
// that snapshot cannot see, is read by the retry in a transaction of its own: 410.
func TestRunTxInRepeatableReadMeetsAKeyGCDeletedAfterItsSnapshot(t *testing.T) {
	t.Parallel()
	o := &expiringOps{}
	h := newHarness(t, nil, o.ops)
	ctx := t.Context()
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		key := uuid.NewString()
		_, err := h.client.Run(ctx, opNote, h.req(key, `{"n":1}`))
		require.NoError(t, err)
		effects := h.count(`SELECT count(*) FROM test_effect`)

		tx, err := h.db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
		require.NoError(t, err)
		var one int
		require.NoError(t, tx.QueryRow(ctx, `SELECT 1`).Scan(&one), "the snapshot is taken")
		gcAll(t, h)
		_, err = h.client.RunTx(ctx, tx, opNote, h.req(key, `{"n":1}`))
		require.ErrorAs(t, err, new(*saga.TransientError), "%s: the snapshot holds no tombstone to answer from: retry", iso)
		_ = tx.Rollback(ctx)
		require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key), "%s: the key is not stored again", iso)
		require.Equal(t, effects, h.count(`SELECT count(*) FROM test_effect`), "%s: the phase did not run again", iso)

		_, err = h.client.Run(ctx, opNote, h.req(key, `{"n":1}`))
		require.ErrorAs(t, err, new(*saga.KeyExpiredError), "%s: the retry meets the tombstone", iso)
	}
}
