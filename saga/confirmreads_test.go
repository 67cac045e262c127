package saga_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
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

// TestCompensationFailureWaitsForTheStandby: a compensation that fails for good after reading
// parks the key only once a commit on the server it read from was acknowledged by its
// synchronous standby. Here the server loses its standby while the compensation runs (as an old
// primary is cut off): whatever the execution then writes waits, and what it waits to write is
// not the park. Once the standby is back the execution ends transient, the key still started for
// a later attempt; with the park decided on unconfirmed reads, the key would end parked.
func TestCompensationFailureWaitsForTheStandby(t *testing.T) {
	t.Parallel()
	cluster, err := pglocal.Start(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cluster.Stop()) })
	url := cluster.URL("postgres")
	ctx := t.Context()
	admin, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	_, err = migrations.Migrate(ctx, admin, &migrations.MigrateOpts{SkipRiver: true})
	require.NoError(t, err)

	// standby names a synchronous standby that never connects (or none, with ""), and gives the
	// server a moment to take the setting in: while one is named, every commit that writes waits.
	standby := func(name string) error {
		if _, err := admin.Exec(context.Background(), `ALTER SYSTEM SET synchronous_standby_names = '`+name+`'`); err != nil {
			return err
		}
		if _, err := admin.Exec(context.Background(), `SELECT pg_reload_conf()`); err != nil {
			return err
		}
		time.Sleep(time.Second)
		return nil
	}
	op := &phases.Operation{Name: "book", Steps: []phases.Step{
		phases.Atomic("hold", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error { return nil }).
			WithCompensation(func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
					return err
				}
				if err := standby("gone"); err != nil {
					return err
				}
				return phases.Permanent(errors.New("the hold cannot be released"))
			}),
		phases.Atomic("decide", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			return phases.Reject(http.StatusConflict, "taken", "already taken")
		}),
	}}
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	saga.WithoutCancelRequests(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	const lease = 3 * time.Second
	c, err := saga.NewClient(&saga.Config{DB: pool, Lease: lease, Operations: []*phases.Operation{op}})
	require.NoError(t, err)

	key := uuid.NewString()
	var res *saga.Result
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = c.Run(ctx, "book", &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: key,
			Method: "POST", Path: "/bookings", Body: []byte(`{}`)})
	}()
	// Past the compensation's lease, with the standby gone, nothing has ended the execution.
	select {
	case <-done:
		t.Fatalf("the execution ended while no standby could confirm anything: %+v, %v", res, err)
	case <-time.After(lease + 3*time.Second):
	}
	require.NoError(t, standby(""))
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the execution did not end once the standby was back")
	}
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient, "answered: %+v", res)
	var status string
	require.NoError(t, admin.QueryRow(ctx, `SELECT status FROM pgsaga_key WHERE key = $1`, key).Scan(&status))
	require.Equal(t, "started", status, "not parked on reads nothing confirmed")
}
