package pgcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testConfig(t testing.TB) *Config {
	return &Config{Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
}

// startCluster starts a cluster for t and stops it when t ends, keeping the nodes' logs in the
// test's output when it failed.
func startCluster(t *testing.T, cfg *Config) *Cluster {
	t.Helper()
	begin := time.Now()
	c, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Logf("cluster started in %s", time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes() {
				t.Logf("%s's log:\n%s", n.Name, logTail(n.LogPath()))
			}
		}
		require.NoError(t, c.Stop())
		require.NoDirExists(t, c.Dir())
	})
	return c
}

// exec runs sql on url.
func exec1(t testing.TB, url, sql string, args ...any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// count returns the rows of table on url that hold v.
func count(t testing.TB, url, table string, v string) int {
	t.Helper()
	n, err := tryCount(t, url, table, v)
	require.NoError(t, err)
	return n
}

func tryCount(t testing.TB, url, table string, v string) (int, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE v = $1", v).Scan(&n)
	return n, err
}

// waitCount waits until the rows of table on url holding v number want (a standby replays
// what the primary committed a moment later).
func waitCount(t testing.TB, url, table, v string, want int) {
	t.Helper()
	var n int
	var err error
	require.True(t, waitFor(30*time.Second, func() bool { n, err = tryCount(t, url, table, v); return err == nil && n == want }),
		"%s on %s: want %d rows with %q, have %d (%v)", table, url, want, v, n, err)
}

// A new cluster: the URL reaches the primary, a write reaches the standby, processes run as the
// expected user, and Stop leaves nothing.
func TestStartStop(t *testing.T) {
	t.Parallel()
	c := startCluster(t, testConfig(t))
	require.False(t, c.Synchronous())
	primary, err := c.Primary(t.Context())
	require.NoError(t, err)
	standby, err := c.Standby(t.Context())
	require.NoError(t, err)
	require.NotEqual(t, primary, standby)

	require.NoError(t, exec1(t, c.URL("postgres"), "CREATE TABLE t (v text); INSERT INTO t VALUES ('one')"))
	for _, n := range []*Node{primary, standby} {
		// A server killed with SIGKILL leaves its segments in its data directory, not in /dev/shm.
		require.NoError(t, exec1(t, n.URL("postgres"), `DO $$ BEGIN
			IF current_setting('dynamic_shared_memory_type') <> 'mmap' THEN RAISE 'dynamic_shared_memory_type'; END IF;
			IF current_setting('synchronous_commit') <> 'on' THEN RAISE 'synchronous_commit'; END IF;
		END $$`))
	}
	waitCount(t, standby.URL("postgres"), "t", "one", 1)
	require.ErrorContains(t, exec1(t, standby.URL("postgres"), "INSERT INTO t VALUES ('two')"), "25006",
		"the standby is read-only")

	want := expectedOwner(t)
	pids := []int{c.etcd.Pid()}
	for _, n := range c.Nodes() {
		pm, err := n.postmaster()
		require.NoError(t, err)
		pids = append(pids, n.patroni.Pid(), pm)
		pids = append(pids, children(pm)...)
	}
	for _, pid := range pids {
		if uid, ok := processUID(pid); ok { // a backend may have ended since it was listed
			require.Equal(t, want, uid, "process %d (%s)", pid, childproc.Cmdline(pid))
		}
	}

	require.NoError(t, c.Stop())
	require.NoDirExists(t, c.Dir())
	for _, pid := range pids {
		require.False(t, childproc.Alive(pid), "process %d still runs after Stop", pid)
	}
	require.NoError(t, c.Stop(), "Stop is idempotent")
}

// In synchronous mode each fault fails over to the standby, no acknowledged commit is lost, and
// the old primary comes back as the standby. A commit sent to a partitioned primary is never
// acknowledged: healed, it waits for a synchronous standby that is gone, and the old primary is
// demoted under it.
func TestFailoverFaults(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Synchronous = true
	c := startCluster(t, cfg)
	require.NoError(t, exec1(t, c.URL("postgres"), "CREATE TABLE t (v text)"))

	for _, fault := range []string{"kill", "partition", "switchover"} {
		old, _, err := c.WaitHealthy(t.Context())
		require.NoError(t, err)
		require.NoError(t, exec1(t, c.URL("postgres"), "INSERT INTO t VALUES ($1)", "before "+fault))
		begin := time.Now()
		var next *Node
		switch fault {
		case "kill":
			killed, err := c.KillPrimary(t.Context())
			require.NoError(t, err)
			require.Equal(t, old, killed)
			next, err = c.WaitForPrimary(t.Context(), old)
			require.NoError(t, err)
		case "partition":
			// A transaction open on the primary, committed once it is cut off.
			conn, err := pgx.Connect(t.Context(), old.URL("postgres"))
			require.NoError(t, err)
			defer conn.Close(context.Background())
			tx, err := conn.Begin(t.Context())
			require.NoError(t, err)
			_, err = tx.Exec(t.Context(), "INSERT INTO t VALUES ('zombie')")
			require.NoError(t, err)

			p, err := c.PartitionPrimary(t.Context())
			require.NoError(t, err)
			require.Equal(t, old, p.Node)
			committed := make(chan error, 1)
			go func() { committed <- tx.Commit(context.WithoutCancel(t.Context())) }()
			next, err = c.WaitForPrimary(t.Context(), old)
			require.NoError(t, err)
			t.Logf("promoted after %s", time.Since(begin).Round(time.Millisecond))
			select {
			case err := <-committed:
				t.Fatalf("a frozen primary answered a COMMIT: %v", err)
			default:
			}
			require.NoError(t, p.Heal())
			select {
			case err := <-committed:
				require.Error(t, err, "the old primary acknowledged a commit after the new one took over")
				t.Logf("the COMMIT sent to the old primary failed: %v", err)
			case <-time.After(time.Minute):
				t.Fatal("the COMMIT sent to the old primary neither failed nor succeeded within a minute")
			}
		case "switchover":
			next, err = c.Switchover(t.Context())
			require.NoError(t, err)
		}
		require.NotEqual(t, old, next)
		t.Logf("%s: %s is the primary after %s", fault, next, time.Since(begin).Round(time.Millisecond))
		require.Equal(t, 1, count(t, c.URL("postgres"), "t", "before "+fault), "an acknowledged commit survives")
		_, standby, err := c.WaitHealthy(t.Context())
		require.NoError(t, err)
		require.Equal(t, old, standby, "the old primary is the standby again")
		t.Logf("%s: healthy after %s", fault, time.Since(begin).Round(time.Millisecond))
		require.NoError(t, exec1(t, c.URL("postgres"), "INSERT INTO t VALUES ($1)", "after "+fault))
		waitCount(t, standby.URL("postgres"), "t", "after "+fault, 1)
	}
	require.Zero(t, count(t, c.URL("postgres"), "t", "zombie"), "the old primary's commit is nowhere")
}

// In asynchronous mode LossyFailover loses what the primary acknowledged in its commit function,
// on both nodes; in synchronous mode it refuses.
func TestLossyFailover(t *testing.T) {
	t.Parallel()
	c := startCluster(t, testConfig(t))
	require.NoError(t, exec1(t, c.URL("postgres"), "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')"))
	old, err := c.Primary(t.Context())
	require.NoError(t, err)
	next, err := c.LossyFailover(t.Context(), func(ctx context.Context) error {
		return exec1(t, c.URL("postgres"), "INSERT INTO t VALUES ('lost')")
	})
	require.NoError(t, err)
	require.NotEqual(t, old, next)
	require.Equal(t, 1, count(t, c.URL("postgres"), "t", "kept"))
	require.Zero(t, count(t, c.URL("postgres"), "t", "lost"), "the acknowledged commit is lost")
	_, standby, err := c.WaitHealthy(t.Context())
	require.NoError(t, err)
	require.Equal(t, old, standby)
	require.Zero(t, count(t, standby.URL("postgres"), "t", "lost"), "the old primary was rewound")

	require.NoError(t, c.SetSynchronous(t.Context(), true))
	_, err = c.LossyFailover(t.Context(), func(context.Context) error { return nil })
	require.ErrorIs(t, err, ErrSynchronous)
}

// Environment of the test binary run as a helper process: it starts a cluster in the base
// directory, freezes its primary, prints "started <dir> <pid>…" and waits to be killed.
const helperBaseEnv = "PGCLUSTER_TEST_HELPER_BASEDIR"

func TestHelperProcess(t *testing.T) {
	base := os.Getenv(helperBaseEnv)
	if base == "" {
		t.Skip("only run as a subprocess by the test that kills it")
	}
	c, err := Start(context.Background(), &Config{BaseDir: base})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	pids := []string{strconv.Itoa(c.etcd.Pid())}
	for _, n := range c.Nodes() {
		pm, err := n.postmaster()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		pids = append(pids, strconv.Itoa(n.patroni.Pid()), strconv.Itoa(pm))
		for _, child := range children(pm) {
			pids = append(pids, strconv.Itoa(child))
		}
	}
	if _, err := c.PartitionPrimary(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("started %s %s\n", c.Dir(), strings.Join(pids, " "))
	select {} // until killed
}

// A test process killed with SIGKILL, with its primary frozen, leaves no process and no
// directory: the guardian cleans up.
func TestKilledProcessLeavesNothing(t *testing.T) {
	t.Parallel()
	base := reachableTempDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperBaseEnv+"="+base)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var dir string
	var pids []int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "started "); ok {
			fields := strings.Fields(rest)
			dir = fields[0]
			for _, f := range fields[1:] {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				pids = append(pids, pid)
			}
			break
		}
		require.NotContains(t, sc.Text(), "error:")
	}
	require.NotEmpty(t, pids, "the helper did not report a started cluster")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	require.DirExists(t, dir)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	for _, pid := range pids {
		require.True(t, waitFor(20*time.Second, func() bool { return !childproc.Alive(pid) }), "process %d (%s) survived", pid, childproc.Cmdline(pid))
	}
	require.True(t, waitFor(20*time.Second, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }),
		"the guardian removed %s", dir)
}

func TestSweep(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mine := filepath.Join(base, fmt.Sprintf("%s%d-abc", dirPrefix, os.Getpid()))
	gone := filepath.Join(base, fmt.Sprintf("%s%d-abc", dirPrefix, 1<<22+1)) // above pid_max's default
	other := filepath.Join(base, "unrelated")
	for _, d := range []string{mine, gone, other} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "n0", "data"), 0o700))
	}
	n, err := Sweep(base)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.DirExists(t, mine)
	require.NoDirExists(t, gone)
	require.DirExists(t, other)
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{TTL: 1500 * time.Millisecond}, "TTL must be a whole number of seconds"},
		{Config{TTL: 3 * time.Second}, "TTL (3s) must be at least LoopWait + 2*RetryTimeout (5s)"},
		{Config{SynchronousStrict: true}, "SynchronousStrict needs Synchronous"},
		{Config{MaximumLagOnFailover: -1}, "MaximumLagOnFailover must not be negative"},
		{Config{Patroni: "/nonexistent/patroni"}, "apt-get install patroni etcd-server"},
	} {
		_, err := Start(t.Context(), &tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

// reachableTempDir returns a new empty directory that the postgres user can reach when we are
// root (t.TempDir's parent is private), removed at the end of the test.
func reachableTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "pgcluster-test-*")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o777))
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	return dir
}

// expectedOwner is the uid the cluster must run as: the postgres (or nobody) user when we are root.
func expectedOwner(t testing.TB) int {
	if os.Geteuid() != 0 {
		return os.Geteuid()
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		u, err = user.Lookup("nobody")
	}
	require.NoError(t, err)
	uid, err := strconv.Atoi(u.Uid)
	require.NoError(t, err)
	require.NotZero(t, uid)
	return uid
}

// processUID returns the real uid of pid from /proc, false when pid is gone.
func processUID(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			return uid, err == nil
		}
	}
	return 0, false
}
