package main_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// pointWorkerStart is where the binary stands between its database checks and the worker's
// start (River's), when $PGSAGA_CHAOS_PAUSE holds it there.
const pointWorkerStart = "worker/start"

// startFailed is what the worker logs each time its start fails and it tries again.
const startFailed = "worker start failed, retrying"

// droppedDB is a migrated database on a PostgreSQL of the test's own, which the test stops and
// starts, with the payments service of a world running on it in the test process.
type droppedDB struct {
	t       *testing.T
	cluster *pglocal.Cluster
	url     string
	pool    *pgxpool.Pool
	*world
}

func newDroppedDB(t *testing.T) *droppedDB {
	t.Helper()
	cluster, err := pglocal.Start(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Stop() })
	url := cluster.URL("postgres")
	r := pgsaga(t, nil, "migrate", "--database-url", url)
	require.Equal(t, 0, r.code, r.String())
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return &droppedDB{t: t, cluster: cluster, url: url, pool: pool, world: newWorldOn(t, &dbtest.DB{URL: url, Pool: pool})}
}

// down stops PostgreSQL (fast shutdown: sessions ended, then no server).
func (d *droppedDB) down() {
	d.t.Helper()
	require.NoError(d.t, d.cluster.Halt())
}

// up starts PostgreSQL again on the same data; the test's pool drops the connections the
// restart broke, as the binary's pools do on their own.
func (d *droppedDB) up() {
	d.t.Helper()
	require.NoError(d.t, d.cluster.Restart(d.t.Context()))
	d.pool.Reset()
}

// crashedKey is a payment whose process died after its charge failed: started, its lease
// expired and its next attempt due now, for a worker to resume.
func (d *droppedDB) crashedKey(actor string) string {
	d.t.Helper()
	key, _ := d.stuckPayment("t1", actor)
	d.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second', next_attempt_at = now() WHERE key = $1`, key)
	return key
}

func (d *droppedDB) completed(key string) bool {
	var status string
	err := d.pool.QueryRow(d.t.Context(), `SELECT status FROM pgsaga_key WHERE key = $1`, key).Scan(&status)
	return err == nil && status == "completed"
}

// pauseEnv holds the binary at point until release is called.
func pauseEnv(t *testing.T, point string) (env []string, release func()) {
	file := filepath.Join(t.TempDir(), "release")
	return []string{chaos.EnvPause + "=" + point + "=" + file}, func() {
		t.Helper()
		require.NoError(t, os.WriteFile(file, nil, 0o600))
	}
}

// waitRunning waits until cond holds, failing at once should p exit meanwhile.
func waitRunning(t *testing.T, p *process, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	waitUntil(t, timeout, what, func() bool {
		select {
		case <-p.done:
			t.Fatalf("pgsaga %s exited (%s) while waiting for %s; stderr:\n%s", p.args[0], p.cmd.ProcessState, what, p.stderr.String())
		default:
		}
		return cond()
	})
}

// rideOutScenario is what a worker (`worker`, or serve's in-process one) must survive: its
// database goes away between its start-up checks and River's start, and stays away for
// outage (at least as long as the worker needs to fail twice); the worker keeps trying
// and, the database back, resumes a crashed key. Then the database goes away while it runs,
// again for outage, and once back the worker resumes another crashed key. p is held at
// pointWorkerStart until release; whileDown, when set, runs during the first outage.
func rideOutScenario(t *testing.T, d *droppedDB, p *process, release func(), outage time.Duration, whileDown func()) {
	t.Helper()
	first := d.crashedKey("alice")
	waitRunning(t, p, 20*time.Second, "the worker to stand between its checks and its start", func() bool {
		return strings.Contains(p.stderr.String(), chaos.PausedLine(pointWorkerStart))
	})
	d.down()
	gone := time.Now()
	release()
	waitRunning(t, p, outage+20*time.Second, "the worker to fail to start twice, the database gone for "+outage.String(), func() bool {
		return strings.Count(p.stderr.String(), startFailed) >= 2 && time.Since(gone) >= outage
	})
	if whileDown != nil {
		whileDown()
	}
	d.up()
	waitRunning(t, p, 20*time.Second, "the worker to resume a crashed key once the database is back", func() bool { return d.completed(first) })

	// The database goes away while the worker runs.
	d.down()
	gone, logged := time.Now(), len(p.stderr.String())
	waitRunning(t, p, outage+20*time.Second, "River to notice the database is gone", func() bool {
		return strings.Contains(p.stderr.String()[logged:], "level=ERROR") && time.Since(gone) >= outage
	})
	d.up()
	second := d.crashedKey("bob")
	waitRunning(t, p, 20*time.Second, "the worker to resume a crashed key after the database came back", func() bool { return d.completed(second) })
	require.Equal(t, 2, d.sim.TotalCharges())
	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}

// A worker whose database goes away between its --db-wait check and River's start neither exits
// nor hangs: it keeps trying to start, and once the database is back it works.
func TestWorkerRidesOutADatabaseGoneAtStart(t *testing.T) {
	t.Parallel()
	d := newDroppedDB(t)
	env, release := pauseEnv(t, pointWorkerStart)
	p := start(t, env, false, "worker", "--database-url", d.url, "--gateway-url", d.simURL, "--sweep-interval", "100ms")
	rideOutScenario(t, d, p, release, 0, nil)
}

// --db-wait bounds only the wait for a database never reached: a worker that reached it keeps
// trying for as long as it is gone, start included.
func TestWorkerKeepsTryingPastDBWait(t *testing.T) {
	t.Parallel()
	d := newDroppedDB(t)
	env, release := pauseEnv(t, pointWorkerStart)
	p := start(t, env, false, "worker", "--database-url", d.url, "--gateway-url", d.simURL, "--sweep-interval", "100ms",
		"--db-wait", "1s")
	rideOutScenario(t, d, p, release, 3*time.Second, nil)
}

// serve's in-process worker (--worker) rides out the same; serve keeps serving meanwhile.
func TestServeWorkerRidesOutADatabaseGoneAtStart(t *testing.T) {
	t.Parallel()
	d := newDroppedDB(t)
	env, release := pauseEnv(t, pointWorkerStart)
	p := start(t, env, false, "serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--database-url", d.url,
		"--gateway-url", d.simURL, "--worker", "--db-wait", "1s")
	rideOutScenario(t, d, p, release, 2*time.Second, func() {
		p.waitURL(5 * time.Second)
		status, _, body := httpDo(t, "GET", p.ops+"/healthz", nil, "")
		require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	})
}

// A database that answers and refuses is no outage: a worker whose River tables are missing
// when River starts exits 1 with one line, whenever that is found.
func TestWorkerExitsOnAnUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	require.NoError(t, err)
	r := pgsaga(t, nil, "worker", "--database-url", db.URL, "--db-wait", "1s")
	requireFailure(t, r, "run `pgsaga migrate`")

	// Migrated at the checks, River's queue table gone at River's start.
	db = dbtest.NewDB(t)
	env, release := pauseEnv(t, pointWorkerStart)
	p := start(t, env, false, "worker", "--database-url", db.URL, "--log-level", "off")
	waitUntil(t, 20*time.Second, "the worker to stand between its checks and its start", func() bool {
		return strings.Contains(p.stderr.String(), chaos.PausedLine(pointWorkerStart))
	})
	_, err = db.Pool.Exec(t.Context(), `DROP TABLE river_queue`)
	require.NoError(t, err)
	release()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker did not exit on a database without River's tables: %s", p.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	require.Equal(t, 1, p.cmd.ProcessState.ExitCode(), p.stderr.String())
	require.Len(t, lines, 2, p.stderr.String())
	require.Equal(t, chaos.PausedLine(pointWorkerStart), lines[0])
	require.Contains(t, lines[1], "pgsaga worker: error starting worker:")
	require.Contains(t, lines[1], "river_queue")
}

// SIGTERM stops a worker still trying to start, at once and cleanly.
func TestWorkerStopsWhileItCannotStart(t *testing.T) {
	t.Parallel()
	d := newDroppedDB(t)
	env, release := pauseEnv(t, pointWorkerStart)
	p := start(t, env, false, "worker", "--database-url", d.url, "--gateway-url", d.simURL)
	waitRunning(t, p, 20*time.Second, "the worker to stand between its checks and its start", func() bool {
		return strings.Contains(p.stderr.String(), chaos.PausedLine(pointWorkerStart))
	})
	d.down()
	release()
	waitRunning(t, p, 20*time.Second, "the worker to fail to start", func() bool {
		return strings.Contains(p.stderr.String(), startFailed)
	})
	begin := time.Now()
	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
	require.Less(t, time.Since(begin), 5*time.Second, p.stderr.String())
}

// A database that only reads (a standby, while a replicated pair fails over) refuses River's
// start with SQLSTATE 25006: the worker waits that out as an outage, and works once writes are
// accepted again. The database is made read-only and its sessions ended, as a failover ends the
// old primary's.
func TestWorkerWaitsOutAReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	readOnly := func(on bool) {
		setting := `ALTER DATABASE ` + pgx.Identifier{w.db.Name}.Sanitize() + ` RESET default_transaction_read_only`
		if on {
			setting = `ALTER DATABASE ` + pgx.Identifier{w.db.Name}.Sanitize() + ` SET default_transaction_read_only = on`
		}
		// Read-write explicitly: the test's own sessions are read-only too while it is on.
		err := pgx.BeginTxFunc(t.Context(), w.db.Pool, pgx.TxOptions{AccessMode: pgx.ReadWrite}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), setting); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`)
			return err
		})
		require.NoError(t, err)
		w.db.Pool.Reset()
	}
	key, _ := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second', next_attempt_at = now() WHERE key = $1`, key)
	env, release := pauseEnv(t, pointWorkerStart)
	p := start(t, env, false, "worker", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--sweep-interval", "100ms")
	waitRunning(t, p, 20*time.Second, "the worker to stand between its checks and its start", func() bool {
		return strings.Contains(p.stderr.String(), chaos.PausedLine(pointWorkerStart))
	})
	readOnly(true)
	release()
	refusedRetried := regexp.MustCompile(startFailed + `.*SQLSTATE 25006`)
	waitRunning(t, p, 20*time.Second, "the worker to retry a start the read-only database refused", func() bool {
		return refusedRetried.MatchString(p.stderr.String())
	})
	readOnly(false)
	waitRunning(t, p, 20*time.Second, "the worker to resume a crashed key once writes are accepted", func() bool {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}
