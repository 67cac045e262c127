package worker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// Tests in this file run workers as real processes (this test binary started again, see
// runWorkerProcess) and kill them with SIGKILL: no deferred call runs, River's leader does not
// resign, the database only sees the connections drop.

// envWorkerProcess makes the test binary a worker process; its value is the process's role:
// "hold" blocks every external call until the process dies, "finish" lets every call succeed.
// envWorkerDB is the database it works.
const (
	envWorkerProcess = "PGSAGA_WORKER_PROCESS"
	envWorkerDB      = "PGSAGA_WORKER_DB"
)

// The recovery settings of the measurements: a 3s lease and a 200ms sweep.
const (
	killLease = 3 * time.Second
	killSweep = 200 * time.Millisecond
)

// runWorkerProcess is a worker process's main: a worker for OpEffect with killLease and
// killSweep. It prints "river <id>" (its River client's id, as River's leader table names it)
// once started, and "holding <key>" when a call it holds starts. SIGTERM stops it cleanly.
func runWorkerProcess(role string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(envWorkerDB))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	eff := newEffects()
	if role == "hold" {
		eff.OnCall = func(_ context.Context, key string) {
			fmt.Printf("holding %s\n", key)
			select {} // a call that hangs until the process dies
		}
	}
	// The call is never cut (CallTimeout far beyond the test): its heartbeats keep the lease
	// running until the process dies.
	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{eff.Operation(nil)},
		Lease: killLease, CallTimeout: time.Hour})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	w, err := worker.New(&worker.Config{Pool: pool, Client: client, SweepInterval: killSweep})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if err := w.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Printf("river %s\n", w.RiverClient().ID())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Stop(stopCtx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// workerProcess is a running worker process and the lines it printed.
type workerProcess struct {
	proc  *childproc.Process
	lines chan string
}

// startWorkerProcess starts this test binary as a worker process of role on db, and kills it
// when the test ends.
func startWorkerProcess(t *testing.T, db *dbtest.DB, role string) *workerProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorkerProcess+"="+role, envWorkerDB+"="+db.URL)
	cmd.SysProcAttr = childproc.SysProcAttr(nil, syscall.SIGKILL)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	proc, err := childproc.Start(cmd)
	require.NoError(t, err)
	p := &workerProcess{proc: proc, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			p.lines <- s.Text()
		}
	}()
	t.Cleanup(func() { proc.Stop(syscall.SIGKILL, 10*time.Second) })
	return p
}

// line waits for the process to print a line starting with prefix and returns the rest.
func (p *workerProcess) line(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			require.True(t, ok, "the worker process ended without printing %q", prefix)
			if rest, found := strings.CutPrefix(l, prefix+" "); found {
				return rest
			}
		case <-timeout:
			t.Fatalf("the worker process printed no %q line in 60s", prefix)
		}
	}
}

// riverLeader is the id of River's current leader, or "" when there is none.
func riverLeader(t *testing.T, db *dbtest.DB) string {
	t.Helper()
	var id string
	err := db.Pool.QueryRow(t.Context(), `SELECT coalesce(max(leader_id), '') FROM river_leader WHERE expires_at > now()`).Scan(&id)
	require.NoError(t, err)
	return id
}

// Two worker processes; River's leader is resuming a key, its call hanging, when it is killed
// with SIGKILL. Its leadership outlives it (River's leader row expires on its own), but the
// key must not wait for that: the other worker finishes it within lease + two sweep intervals
// + 2s of the kill, and the key's last phase commits once.
func TestKilledLeaderKeyFinishedOnTime(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs worker processes for several seconds; skipped with -short")
	}
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)

	// The first worker runs alone: it is elected, and it takes the key.
	holder := startWorkerProcess(t, db, "hold")
	holderID := holder.line(t, "river")
	waitFor(t, "the first worker to lead", 30*time.Second, func() bool { return riverLeader(t, db) == holderID })
	key := seedCrashed(t, db.Pool, "leader-kill", 1)[0]
	require.Equal(t, key, holder.line(t, "holding"))

	finisher := startWorkerProcess(t, db, "finish")
	finisherID := finisher.line(t, "river")
	require.NotEqual(t, holderID, finisherID)
	require.Equal(t, holderID, riverLeader(t, db), "the worker to kill leads River")
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key
		WHERE key = $1 AND status = 'started' AND locked_until > now()`, key), "the dead worker's lease is running")

	require.NoError(t, syscall.Kill(holder.proc.Pid(), syscall.SIGKILL))
	killed := time.Now()
	bound := killLease + 2*killSweep + 2*time.Second
	waitFor(t, "the other worker to finish the key", time.Minute, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	took := time.Since(killed)
	t.Logf("key finished %s after its worker (River's leader) was killed; bound %s", took.Round(10*time.Millisecond), bound)
	require.LessOrEqual(t, took, bound, "recovery after the leader's death took longer than lease + two sweeps + 2s")
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM effect_rows WHERE key = $1`, key), "the last phase committed once")
}
