package worker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// Four workers, as four processes would be, each sweeping every 100ms, and keys appearing in
// waves while they run: no resume job may pass over a key it was given. A key its job skipped would wait
// for its reservation to end, a lease (a minute here), before a sweep enqueued it again; every
// key must instead complete well within the lease, claimed once.
func TestConcurrentSweepsLeaveNoKeyBehind(t *testing.T) {
	t.Parallel()
	const keys, waves = 10000, 1
	const lease = time.Minute
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	eff := newEffects()
	for range 4 {
		pool, err := pgxpool.New(t.Context(), db.URL)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c := newClient(t, pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}, Lease: lease})
		startWorker(t, &worker.Config{Pool: pool, Client: c, SweepInterval: 100 * time.Millisecond})
	}
	start := time.Now()
	for i := range waves {
		seedCrashed(t, db.Pool, fmt.Sprintf("wave%d", i), keys/waves)
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "every key to complete", lease*3/4, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`) == keys
	})
	t.Logf("%d keys resumed in %s", keys, time.Since(start).Round(time.Millisecond))
	require.Equal(t, keys, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE attempts = 2`), "each key claimed once")
	require.Equal(t, keys, countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`))
}

// Sweeps take turns: while another process's sweep holds the sweep's lock, a worker enqueues
// nothing, and a process that dies holding it (its connection dropped, no ROLLBACK sent) frees
// it for the others at once.
func TestSweepWaitsItsTurn(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	ctx := t.Context()
	other, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	tx, err := other.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, worker.SweepLockID)
	require.NoError(t, err)

	key := seedCrashed(t, db.Pool, "turn", 1)[0]
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{newEffects().Operation(nil)}})
	startWorker(t, &worker.Config{Pool: db.Pool, Client: c, SweepInterval: 20 * time.Millisecond})
	time.Sleep(500 * time.Millisecond) // some 25 sweeps
	require.Zero(t, countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_resume_batch'`), "no sweep ran while another held the lock")
	require.Zero(t, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE reserved_until IS NOT NULL`))

	require.NoError(t, other.PgConn().Conn().Close()) // the holder dies mid-sweep
	waitFor(t, "the key to complete", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
}
