package worker_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// seedAged inserts n keys named prefix-NNNNN in the given state, created and (for completed
// keys) completed completedAgo ago, expiring expiresIn from now.
func seedAged(t testing.TB, pool *pgxpool.Pool, prefix, status string, n int, completedAgo, expiresIn time.Duration) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
			request_hash, request_body, status, recovery_point, lease_token, locked_until, next_attempt_at,
			response_status, response_body, completed_at, expires_at, last_error, created_at)
		SELECT 't1', 'a1', $1 || '-' || lpad(i::text, 5, '0'), 'effect', 'POST', '/effects',
			sha256('{}'::bytea), '{}'::bytea, $2,
			CASE $2 WHEN 'completed' THEN 'finished' ELSE 'created' END,
			gen_random_uuid(),
			CASE $2 WHEN 'started' THEN now() - $4 * interval '1 millisecond' END,
			now() - $4 * interval '1 millisecond',
			CASE $2 WHEN 'completed' THEN 201 END,
			CASE $2 WHEN 'completed' THEN '{}'::bytea END,
			CASE $2 WHEN 'completed' THEN now() - $4 * interval '1 millisecond' END,
			CASE $2 WHEN 'completed' THEN now() + $5 * interval '1 millisecond' END,
			CASE $2 WHEN 'failed' THEN 'attempts exhausted' END,
			now() - $4 * interval '1 millisecond'
		FROM generate_series(0, $3 - 1) AS i`, prefix, status, n, completedAgo.Milliseconds(), expiresIn.Milliseconds())
	require.NoError(t, err)
}

func statusCounts(t testing.TB, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT split_part(key, '-', 1), count(*) FROM pgsaga_key GROUP BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		require.NoError(t, rows.Scan(&k, &n))
		out[k] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// GC (through saga's read API) deletes completed keys past their expiry (or past OlderThan), in batches, and never a
// started or failed key however old.
func TestDeleteExpiredKeepsStartedAndFailedKeys(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	seedAged(t, db.Pool, "expired", "completed", 5, 48*time.Hour, -24*time.Hour)
	seedAged(t, db.Pool, "fresh", "completed", 3, 2*time.Hour, 22*time.Hour)
	seedAged(t, db.Pool, "recent", "completed", 2, time.Minute, 24*time.Hour)
	seedAged(t, db.Pool, "started", "started", 2, 30*24*time.Hour, 0)
	seedAged(t, db.Pool, "failed", "failed", 2, 30*24*time.Hour, 0)
	c := newClient(t, db.Pool, &saga.Config{})
	olderThan := func(d time.Duration) *time.Duration { return &d }

	n, err := c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, map[string]int{"expired": 5, "fresh": 3, "recent": 2, "started": 2, "failed": 2}, statusCounts(t, db.Pool), "a dry run deletes nothing")

	n, err = c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{BatchSize: 2})
	require.NoError(t, err)
	require.Equal(t, 5, n, "three batches of at most 2")
	require.Equal(t, map[string]int{"fresh": 3, "recent": 2, "started": 2, "failed": 2}, statusCounts(t, db.Pool))

	// OlderThan overrides each key's own expiry, in both directions.
	n, err = c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: olderThan(time.Hour), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	n, err = c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: olderThan(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, map[string]int{"recent": 2, "started": 2, "failed": 2}, statusCounts(t, db.Pool))

	n, err = c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: olderThan(time.Millisecond)})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, map[string]int{"started": 2, "failed": 2}, statusCounts(t, db.Pool), "started and failed keys are never deleted")

	_, err = c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: olderThan(-time.Hour)})
	require.ErrorContains(t, err, "OlderThan")
	_, err = c.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{BatchSize: -1})
	require.ErrorContains(t, err, "BatchSize")
}

// GC skips rows a transaction holds locked instead of waiting for them.
func TestDeleteExpiredSkipsLockedKeys(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	seedAged(t, db.Pool, "expired", "completed", 3, 48*time.Hour, -24*time.Hour)
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM pgsaga_key WHERE key = 'expired-00000' FOR UPDATE`)
	require.NoError(t, err)

	c := newClient(t, db.Pool, &saga.Config{})
	n, err := c.KeyDeleteExpired(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.NoError(t, tx.Rollback(ctx))
	n, err = c.KeyDeleteExpired(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// The worker's periodic GC runs on start and deletes expired completed keys only.
func TestWorkerRunsRetentionGC(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	seedAged(t, db.Pool, "expired", "completed", 4, 48*time.Hour, -24*time.Hour)
	seedAged(t, db.Pool, "fresh", "completed", 1, time.Minute, 24*time.Hour)
	seedAged(t, db.Pool, "failed", "failed", 1, 30*24*time.Hour, 0)
	startWorker(t, &worker.Config{Pool: db.Pool, Client: newClient(t, db.Pool, &saga.Config{})})
	waitFor(t, "GC to delete the expired keys", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key`) == 2
	})
	require.Equal(t, map[string]int{"fresh": 1, "failed": 1}, statusCounts(t, db.Pool))
}

func TestDeleteOldInboxKeepsRecentEventIDs(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_inbox (source, event_id, received_at)
		SELECT 'gateway', 'old-' || i, now() - interval '31 days' FROM generate_series(1, 25) AS i
		UNION ALL
		SELECT 'gateway', 'new-' || i, now() - interval '1 day' FROM generate_series(1, 5) AS i`)
	require.NoError(t, err)

	n, err := worker.DeleteOldInbox(t.Context(), db.Pool, 30*24*time.Hour, 10)
	require.NoError(t, err)
	require.Equal(t, 25, n, "deleted in batches of 10 until none is left")
	var left int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pgsaga_inbox WHERE event_id LIKE 'new-%'`).Scan(&left))
	require.Equal(t, 5, left)

	_, err = worker.DeleteOldInbox(t.Context(), db.Pool, 0, 10)
	require.Error(t, err)
}
