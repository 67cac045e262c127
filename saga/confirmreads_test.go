package saga_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// TestRejectionWaitsForTheStandby: a rejection decided on what a phase read is answered and
// stored only once a commit on the server the phase read from was acknowledged by its
// synchronous standby. Here the standby never answers, as for an old primary cut off from its
// standby and not yet demoted, whose reads may be stale: the rejection is neither answered nor
// stored, and the execution fails as transient when the phase's lease ends. The same operation
// on connections that do not wait for the standby answers and stores the rejection.
func TestRejectionWaitsForTheStandby(t *testing.T) {
	t.Parallel()
	url := serverWithoutItsStandby(t)
	ctx := t.Context()

	// The schema, in sessions that do not wait for the standby.
	setup, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(setup.Close)
	_, err = migrations.Migrate(ctx, setup, &migrations.MigrateOpts{SkipRiver: true})
	require.NoError(t, err)

	lookup := &phases.Operation{Name: "lookup", Steps: []phases.Step{
		phases.Atomic("look", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname = 'no_such_thing'`).Scan(&n); err != nil {
				return err
			}
			return phases.Reject(http.StatusNotFound, "not_found", "no such thing")
		}),
	}}
	client := func(synchronousCommit string) *saga.Client {
		cfg, err := pgxpool.ParseConfig(url)
		require.NoError(t, err)
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = synchronousCommit
		saga.WithoutCancelRequests(cfg)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() {
			// A COMMIT left waiting for the standby is ended by the server, so the pool closes.
			_, _ = setup.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)
			pool.Close()
		})
		c, err := saga.NewClient(&saga.Config{DB: pool, Lease: time.Second, Operations: []*phases.Operation{lookup}})
		require.NoError(t, err)
		return c
	}
	req := func(key string) *saga.Request {
		return &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: key, Method: "POST", Path: "/lookups", Body: []byte(`{}`)}
	}

	t.Run("commits wait for the standby: not answered, not stored", func(t *testing.T) {
		key := uuid.NewString()
		c := client("on")
		var res *saga.Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, err = c.Run(ctx, "lookup", req(key))
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the execution outlived the phase's lease: the rejection was being stored without its reads confirmed")
		}
		var transient *saga.TransientError
		require.ErrorAs(t, err, &transient, "answered: %+v", res)
		_, err = client("off").KeyGet(ctx, req(key).Scope, key)
		require.ErrorIs(t, err, saga.ErrKeyNotFound, "nothing stored")
	})

	t.Run("commits do not wait: the rejection is answered and stored", func(t *testing.T) {
		c := client("off")
		key := uuid.NewString()
		res, err := c.Run(ctx, "lookup", req(key))
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, res.Response.Status)
		again, err := c.Run(ctx, "lookup", req(key))
		require.NoError(t, err)
		require.True(t, again.Replayed)
	})
}
