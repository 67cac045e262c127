package saga_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/saga"
)

// serverWithoutItsStandby starts a PostgreSQL server of t's own whose commits, in a session with
// synchronous_commit on, wait for a synchronous standby that never connects: the old primary of
// a failover, cut off from its standby. synchronous_commit is off by default there (pglocal), so
// a session that does not turn it on commits at once. It returns the URL of its postgres
// database.
func serverWithoutItsStandby(t *testing.T) string {
	t.Helper()
	cluster, err := pglocal.Start(t.Context(), &pglocal.Config{Settings: map[string]string{"synchronous_standby_names": "gone"}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cluster.Stop()) })
	return cluster.URL("postgres")
}

// TestWithoutCancelRequests: a COMMIT that waits for a synchronous standby which never answers
// (a primary cut off from its standby) is given up on by its client. With pgx's default, the
// cancel request it sends ends the wait and the row shows on that primary although no standby
// has it; with WithoutCancelRequests it never shows, and the COMMIT is still waiting.
func TestWithoutCancelRequests(t *testing.T) {
	t.Parallel()
	url := serverWithoutItsStandby(t)
	ctx := t.Context()

	// A pool, not one connection: Eventually and Never call their condition on goroutines of
	// their own, and a slow call may still run when the next tick, or the test, reads again.
	admin, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	_, err = admin.Exec(ctx, `CREATE TABLE written (id int PRIMARY KEY)`)
	require.NoError(t, err) // synchronous_commit is off on the throwaway server: no wait here

	// commitGivenUp inserts id in a transaction whose COMMIT waits for the standby, and gives up
	// on it after a moment, as a request whose deadline passed does.
	commitGivenUp := func(t *testing.T, withoutCancel bool, id int) {
		cfg, err := pgxpool.ParseConfig(url)
		require.NoError(t, err)
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
		if withoutCancel {
			saga.WithoutCancelRequests(cfg)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `INSERT INTO written VALUES ($1)`, id)
		require.NoError(t, err)
		commitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, tx.Commit(commitCtx), context.DeadlineExceeded)
	}
	visible := func(id int) bool {
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM written WHERE id = $1`, id).Scan(&n))
		return n == 1
	}

	t.Run("pgx's default: the cancel request ends the wait, the row shows", func(t *testing.T) {
		commitGivenUp(t, false, 1)
		require.Eventually(t, func() bool { return visible(1) }, 10*time.Second, 20*time.Millisecond)
	})

	t.Run("WithoutCancelRequests: the row never shows, the COMMIT still waits", func(t *testing.T) {
		commitGivenUp(t, true, 2)
		require.Never(t, func() bool { return visible(2) }, 2*time.Second, 50*time.Millisecond)
		var waiting int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event = 'SyncRep' AND query LIKE 'commit%'`).Scan(&waiting))
		require.Equal(t, 1, waiting, "the given-up COMMIT waits for the standby")
		// Ended by the server, as a demotion ends it, so that the pool closes at once.
		_, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)
		require.NoError(t, err)
	})
}
