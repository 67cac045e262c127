package saga_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// effects is a test table: one row per effect, so a duplicate effect is a counted row.
const createEffects = `CREATE TABLE effects (id bigserial PRIMARY KEY, key text NOT NULL, what text NOT NULL)`

func newClient(t *testing.T, ops ...*phases.Operation) (*saga.Client, *dbtest.DB) {
	t.Helper()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), createEffects)
	require.NoError(t, err)
	c, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: ops})
	require.NoError(t, err)
	return c, db
}

func countEffects(t *testing.T, db *dbtest.DB, key string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM effects WHERE key = $1`, key).Scan(&n))
	return n
}

func request(key string) *saga.Request {
	return &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: key, Method: "POST", Path: "/things", Body: []byte(`{"n":1}`)}
}

// singleTx is a one-phase operation whose effect is a row; fail decides the phase's fate.
func singleTx(name string, fail func() error) *phases.Operation {
	return &phases.Operation{Name: name, Steps: []phases.Step{
		phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			if _, err := tx.Exec(ctx, `INSERT INTO effects (key, what) VALUES ($1, 'effect')`, run.Key()); err != nil {
				return err
			}
			if err := fail(); err != nil {
				return err
			}
			return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
		}),
	}}
}

func TestTransientFailureStoresNothingAndRetrySucceeds(t *testing.T) {
	t.Parallel()
	failures := 1
	op := singleTx("thing", func() error {
		if failures > 0 {
			failures--
			return errors.New("database hiccup after the effect, before commit")
		}
		return nil
	})
	c, db := newClient(t, op)
	key := uuid.NewString()

	_, err := c.Run(t.Context(), "thing", request(key))
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	require.Equal(t, 0, countEffects(t, db, key), "the effect must roll back with the failed transaction")
	_, err = c.KeyGet(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key)
	require.ErrorIs(t, err, saga.ErrKeyNotFound, "a transient failure must store no key")

	res, err := c.Run(t.Context(), "thing", request(key))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.False(t, res.Replayed)
	require.Equal(t, 1, countEffects(t, db, key))
}

func TestRejectIsStoredWithoutTheEffect(t *testing.T) {
	t.Parallel()
	op := singleTx("thing", func() error { return phases.Reject(http.StatusConflict, "taken", "already taken") })
	c, db := newClient(t, op)
	key := uuid.NewString()

	first, err := c.Run(t.Context(), "thing", request(key))
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, first.Response.Status)
	require.JSONEq(t, `{"type":"urn:pgsaga:error:taken","title":"Taken","status":409,"detail":"already taken",
		"error":"taken","message":"already taken"}`, string(first.Response.Body))
	require.Equal(t, []string{"application/problem+json"}, first.Response.Header["Content-Type"])
	require.Equal(t, 0, countEffects(t, db, key), "a rejected phase commits nothing")

	again, err := c.Run(t.Context(), "thing", request(key))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, first.Response.Body, again.Response.Body)
}

func TestRunTxCommitsWithTheCallersTransaction(t *testing.T) {
	t.Parallel()
	op := singleTx("thing", func() error { return nil })
	c, db := newClient(t, op)
	key := uuid.NewString()
	ctx := t.Context()

	// Rolled back by the caller: no key, no effect.
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = c.RunTx(ctx, tx, "thing", request(key))
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 0, countEffects(t, db, key))

	// Committed with the caller's own write.
	tx, err = db.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO effects (key, what) VALUES ($1, 'caller')`, key)
	require.NoError(t, err)
	res, err := c.RunTx(ctx, tx, "thing", request(key))
	require.NoError(t, err)
	require.False(t, res.Replayed)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 2, countEffects(t, db, key))

	// A duplicate inside another transaction replays and leaves the caller's transaction usable.
	tx, err = db.Pool.Begin(ctx)
	require.NoError(t, err)
	res, err = c.RunTx(ctx, tx, "thing", request(key))
	require.NoError(t, err)
	require.True(t, res.Replayed)
	_, err = tx.Exec(ctx, `SELECT 1`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 2, countEffects(t, db, key))

	other := request(key)
	other.Body = []byte(`{"n":2}`)
	tx, err = db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = c.RunTx(ctx, tx, "thing", other)
	require.ErrorIs(t, err, saga.ErrKeyReused)
}

func TestConfigErrorsNameTheField(t *testing.T) {
	t.Parallel()
	_, err := saga.NewClient(&saga.Config{})
	require.ErrorContains(t, err, "Config.DB")
	db := dbtest.NewDB(t)
	_, err = saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{{Name: "x"}}})
	require.ErrorContains(t, err, "Operation.Steps")
	_, err = saga.NewClient(&saga.Config{DB: db.Pool, Lease: 10e9, CallTimeout: -1})
	require.ErrorContains(t, err, "Config.CallTimeout")
	_, err = saga.NewClient(&saga.Config{DB: db.Pool, MaxAge: -1})
	require.ErrorContains(t, err, "Config.MaxAge")
}

func TestResumeLeavesUnknownOperationsAlone(t *testing.T) {
	t.Parallel()
	failing := singleTx("thing", func() error { return phases.Permanent(errors.New("broken")) })
	c, db := newClient(t, failing)
	key := uuid.NewString()
	_, err := c.Run(t.Context(), "thing", request(key))
	require.ErrorAs(t, err, new(*saga.ParkedError))

	other, err := saga.NewClient(&saga.Config{DB: db.Pool})
	require.NoError(t, err)
	_, err = other.Resume(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key, &saga.ResumeOpts{Parked: true})
	require.ErrorIs(t, err, &saga.RefusedError{Reason: saga.RefusedUnknownOperation})
	parked, err := c.KeyGet(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key)
	require.NoError(t, err)
	require.Equal(t, saga.KeyStatusParked, parked.Status, "a client that cannot run the key must not take it")
	require.Equal(t, 1, parked.Attempts)

	// Expired and started, as a resumer would find it: still not this client's to take.
	_, err = db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET status = 'started', locked_until = now() - interval '1s' WHERE key = $1`, key)
	require.NoError(t, err)
	_, err = other.Resume(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key, &saga.ResumeOpts{Due: true})
	require.ErrorIs(t, err, &saga.RefusedError{Reason: saga.RefusedUnknownOperation}, "a resumer without the operation does not take the key")
	ref, _, err := other.Internal(sibling.Token{}).ResumeNextDue(t.Context())
	require.NoError(t, err)
	require.Nil(t, ref, "a resumer without the operation sees no due key")
	k, err := c.KeyGet(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key)
	require.NoError(t, err)
	require.Equal(t, saga.KeyStatusStarted, k.Status)
	require.Equal(t, 1, k.Attempts, "a client that cannot run the key must not take it")
}

func TestRedactRunsBeforeStoringAndTheFirstAnswerIsTheStoredOne(t *testing.T) {
	t.Parallel()
	op := &phases.Operation{Name: "card", Steps: []phases.Step{
		phases.Atomic("charged", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]string{"id": "c1", "card_number": "4242424242424242"})
		}),
	}}
	db := dbtest.NewDB(t)
	c, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{op},
		Redact: func(_ string, r *saga.Response) *saga.Response {
			out := *r
			out.Body = []byte(`{"id":"c1"}`)
			return &out
		}})
	require.NoError(t, err)
	key := uuid.NewString()
	first, err := c.Run(t.Context(), "card", request(key))
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"c1"}`, string(first.Response.Body), "the caller gets what is stored, never the secret")
	replay, err := c.Run(t.Context(), "card", request(key))
	require.NoError(t, err)
	require.Equal(t, first.Response.Body, replay.Response.Body)
	var stored []byte
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT response_body FROM pgsaga_key WHERE key = $1`, key).Scan(&stored))
	require.NotContains(t, string(stored), "4242")
}

func TestRunTxChecksTheKeyBeforeValidation(t *testing.T) {
	t.Parallel()
	op := singleTx("thing", func() error { return nil })
	op.Validate = func(body []byte) error {
		if string(body) == `{"n":1}` {
			return nil
		}
		return errors.New("n must be 1")
	}
	c, db := newClient(t, op)
	key := uuid.NewString()
	ctx := t.Context()
	run := func(body string) (*saga.Result, error) {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		req := request(key)
		req.Body = []byte(body)
		res, err := c.RunTx(ctx, tx, "thing", req)
		if err == nil {
			require.NoError(t, tx.Commit(ctx))
		}
		return res, err
	}
	_, err := run(`{"n":2}`)
	var invalid *saga.InvalidRequestError
	require.ErrorAs(t, err, &invalid, "a new key with an invalid body stores nothing")
	require.Equal(t, 0, countEffects(t, db, key))

	_, err = run(`{"n":1}`)
	require.NoError(t, err)
	_, err = run(`{"n":2}`)
	require.ErrorIs(t, err, saga.ErrKeyReused, "a reused key is refused before its body is validated")
	require.Equal(t, 1, countEffects(t, db, key))
}
