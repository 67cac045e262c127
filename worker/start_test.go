package worker_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// startFailed is what the worker logs each time its start fails and it tries again.
const startFailed = "worker start failed, retrying"

// logBuffer collects a logger's text output while the worker writes it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// haltedDB is a migrated database on a PostgreSQL of the test's own, with crashed OpEffect keys,
// already stopped. pool is for the worker; check, a pool of its own, for the test's queries.
type haltedDB struct {
	cluster     *pglocal.Cluster
	pool, check *pgxpool.Pool
	keys        []string
}

func newHaltedDB(t *testing.T) *haltedDB {
	t.Helper()
	ctx := t.Context()
	cluster, err := pglocal.Start(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })
	pools := make([]*pgxpool.Pool, 2)
	for i := range pools {
		pools[i], err = pgxpool.New(ctx, cluster.URL("postgres"))
		require.NoError(t, err)
		t.Cleanup(pools[i].Close)
	}
	_, err = migrations.Migrate(ctx, pools[0], nil)
	require.NoError(t, err)
	createEffectTable(t, pools[0])
	keys := seedCrashed(t, pools[0], "gone", 3)
	require.NoError(t, cluster.Halt())
	return &haltedDB{cluster: cluster, pool: pools[0], check: pools[1], keys: keys}
}

// A worker started while its database cannot be reached does not fail: Start returns, the worker
// keeps trying (logging each failure) and, once the database is back, resumes the crashed keys.
func TestStartWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	db := newHaltedDB(t)
	effects := newEffects()
	logs := &logBuffer{}
	w := startWorker(t, &worker.Config{
		Pool:   db.pool,
		Client: newClient(t, db.pool, &saga.Config{Operations: []*phases.Operation{effects.Operation(nil)}}),
		Logger: logs.logger(),
	})
	require.NotNil(t, w)
	waitFor(t, "two failed starts", 20*time.Second, func() bool { return strings.Count(logs.String(), startFailed) >= 2 })
	require.Contains(t, logs.String(), "level=WARN", "an outage is a warning")

	require.NoError(t, db.cluster.Restart(t.Context()))
	waitFor(t, "the worker to resume the crashed keys", 20*time.Second, func() bool {
		return countRows(t, db.check, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`) == len(db.keys)
	})
	for _, key := range db.keys {
		require.Equal(t, 1, effects.Count(key), key)
	}
	require.Contains(t, logs.String(), `msg="worker started"`)
}

// Stop abandons a start still being retried at once, even while an attempt waits for a
// database that does not answer (a host gone from the network).
func TestStopWhileStartIsRetried(t *testing.T) {
	t.Parallel()
	// A "database" that hangs up on every connection until it is told to say nothing at all.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var silent atomic.Bool
	held := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if !silent.Load() {
				_ = conn.Close()
				continue
			}
			select {
			case held <- conn:
			default:
				_ = conn.Close()
			}
		}
	}()
	t.Cleanup(func() {
		for {
			select {
			case conn := <-held:
				_ = conn.Close()
			default:
				return
			}
		}
	})
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@"+ln.Addr().String()+"/none?sslmode=disable")
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	logs := &logBuffer{}
	w, err := worker.New(&worker.Config{
		Pool:   pool,
		Client: newClient(t, pool, &saga.Config{Operations: []*phases.Operation{newEffects().Operation(nil)}}),
		Logger: logs.logger(),
	})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.WithoutCancel(t.Context())))
	waitFor(t, "a failed start", 20*time.Second, func() bool { return strings.Contains(logs.String(), startFailed) })
	silent.Store(true)
	select {
	case conn := <-held:
		defer conn.Close()
	case <-time.After(20 * time.Second):
		t.Fatal("no start attempt reached the silent database")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	require.NoError(t, w.Stop(ctx))
	// An attempt left to itself waits 10s for the ping.
	require.Less(t, time.Since(begin), 5*time.Second, "Stop waited for the attempt under way")
	require.NotContains(t, logs.String(), `msg="worker started"`)
}

// A database that answers and refuses is not waited for: Start returns the error.
func TestStartRefusesADatabaseWithoutRiver(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `DROP TABLE river_queue`)
	require.NoError(t, err)
	logs := &logBuffer{}
	w, err := worker.New(&worker.Config{
		Pool:   db.Pool,
		Client: newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{newEffects().Operation(nil)}}),
		Logger: logs.logger(),
	})
	require.NoError(t, err)
	err = w.Start(context.WithoutCancel(t.Context()))
	require.ErrorContains(t, err, "error starting worker")
	require.ErrorContains(t, err, "river_queue")
	require.NotContains(t, logs.String(), startFailed)
	require.NoError(t, w.Stop(t.Context()))
}
