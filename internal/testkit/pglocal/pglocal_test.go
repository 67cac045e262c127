package pglocal

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
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

func testConfig(t testing.TB) *Config {
	return &Config{Launch: Launch{Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// query runs a one-row, one-column query on url.
func query[T any](t testing.TB, url, sql string) T {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var v T
	require.NoError(t, conn.QueryRow(t.Context(), sql).Scan(&v))
	return v
}

// waitGone waits up to timeout for pid to stop existing.
func waitGone(t testing.TB, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for childproc.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still exists %s later", pid, timeout)
		}
		// Polling: a process that is not our child cannot be waited for.
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c, err := Start(t.Context(), testConfig(t))
	require.NoError(t, err)
	t.Logf("cluster started in %s", time.Since(begin))

	require.Equal(t, 1, query[int](t, c.URL("postgres"), "SELECT 1"))
	require.Equal(t, "off", query[string](t, c.URL("postgres"), "SHOW fsync"))
	require.Equal(t, "UTF8", query[string](t, c.URL("postgres"), "SHOW server_encoding"))

	pid := c.proc.Pid()
	wantUser := expectedOwner(t)
	require.Equal(t, wantUser, processUID(t, pid), "postgres runs as the expected user")

	require.NoError(t, c.Stop())
	require.NoDirExists(t, c.dir)
	require.False(t, childproc.Alive(pid), "postmaster gone after Stop")
	require.NoError(t, c.Stop(), "Stop is idempotent")
}

func TestTwoClustersAtOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.TCP = true
	a, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Stop()) })
	b, err := Start(t.Context(), testConfig(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Stop()) })

	require.NotEqual(t, a.dir, b.dir)
	require.Contains(t, a.URL("x"), "127.0.0.1:")
	for _, c := range []*Cluster{a, b} {
		conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
		require.NoError(t, err)
		_, err = conn.Exec(t.Context(), "CREATE TABLE only_here (id int)")
		require.NoError(t, err, "each cluster is its own: the table exists in neither before")
		require.NoError(t, conn.Close(t.Context()))
	}
}

func TestFsyncOn(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Fsync = true
	cfg.Settings = map[string]string{"application_name": "pglocal_test"}
	c, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	require.Equal(t, "on", query[string](t, c.URL("postgres"), "SHOW fsync"))
	require.Equal(t, "on", query[string](t, c.URL("postgres"), "SHOW full_page_writes"))
}

func TestBadBinDir(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.BinDir = t.TempDir()
	_, err := Start(t.Context(), cfg)
	require.ErrorContains(t, err, "error starting postgres: Config.BinDir:")
}

func TestStartFailureShowsServerLog(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Settings = map[string]string{"no_such_setting": "1"}
	base := reachableTempDir(t)
	cfg.BaseDir = base
	_, err := Start(t.Context(), cfg)
	require.ErrorContains(t, err, "error starting postgres")
	require.ErrorContains(t, err, `unrecognized configuration parameter "no_such_setting"`)
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	require.Empty(t, entries, "a failed Start leaves no directory")
}

// Environment of the test binary run as a helper process: it starts a cluster in the base
// directory, prints "started <postmaster pid> <dir>", and waits to be killed.
const (
	helperBaseEnv   = "PGLOCAL_TEST_HELPER_BASEDIR"
	helperSignalEnv = "PGLOCAL_TEST_HELPER_STOP_ON_SIGNAL" // non-empty: call StopOnSignal
	// helperBouncerEnv, non-empty, also starts a bouncer in front of the cluster and prints
	// "bouncer <pgbouncer pid> <dir>" before "started …".
	helperBouncerEnv = "PGLOCAL_TEST_HELPER_BOUNCER"
)

func TestHelperProcess(t *testing.T) {
	base := os.Getenv(helperBaseEnv)
	if base == "" {
		t.Skip("only run as a subprocess by the tests that kill it")
	}
	c, err := Start(context.Background(), &Config{Launch: Launch{BaseDir: base}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if os.Getenv(helperSignalEnv) != "" {
		defer c.StopOnSignal()()
	}
	if os.Getenv(helperBouncerEnv) != "" {
		b, err := StartBouncer(context.Background(), &BouncerConfig{ServerURL: c.URL("postgres"), Launch: Launch{BaseDir: base}})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("bouncer %d %s\n", b.proc.Pid(), b.dir)
	}
	fmt.Printf("started %d %s\n", c.proc.Pid(), c.dir)
	select {} // until killed
}

// helper runs TestHelperProcess in a subprocess and returns it once its cluster runs, with the
// postmaster's pid and the cluster's directory.
func helper(t *testing.T, base string, stopOnSignal bool) (cmd *exec.Cmd, pid int, dir string) {
	cmd = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperBaseEnv+"="+base)
	if stopOnSignal {
		cmd.Env = append(cmd.Env, helperSignalEnv+"=1")
	}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "started %d %s", &pid, &dir); err == nil {
			break
		}
		require.NotContains(t, sc.Text(), "error:")
	}
	require.NotZero(t, pid, "helper did not report a started cluster")
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // never block the helper on a full pipe
	return cmd, pid, dir
}

func TestKilledProcessLeavesNoServer(t *testing.T) {
	t.Parallel()
	base := reachableTempDir(t)
	cmd, pid, dir := helper(t, base, false)
	require.Equal(t, expectedOwner(t), processUID(t, pid), "the parent-death signal survives the switch of user")
	children := childPIDs(pid)
	require.NotEmpty(t, children, "postmaster has background processes")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()

	waitGone(t, pid, 10*time.Second)
	for _, child := range children {
		waitGone(t, child, 10*time.Second)
	}

	// The directory stays behind; the next Start (here Sweep) removes it.
	require.DirExists(t, dir)
	n, err := Sweep(base)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoDirExists(t, dir)
}

func TestStopOnSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			if signal.Ignored(sig) {
				t.Skipf("%s is ignored here (a background job?), so it is in the helper too", sig)
			}
			cmd, pid, dir := helper(t, reachableTempDir(t), true)
			require.NoError(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr)
			status := exitErr.Sys().(syscall.WaitStatus)
			require.True(t, status.Signaled() && status.Signal() == sig, "helper died from %s, got %v", sig, err)
			require.NoDirExists(t, dir, "cluster directory removed before dying")
			require.False(t, childproc.Alive(pid), "server stopped before dying")
		})
	}
}

func TestNoBinaries(t *testing.T) { // not parallel: sets PATH
	t.Setenv("PATH", t.TempDir())
	_, err := findBinaries("", filepath.Join(t.TempDir(), "*", "bin"))
	require.ErrorContains(t, err, "no PostgreSQL server binaries found")
	require.ErrorContains(t, err, "install postgresql")
	require.NotContains(t, err.Error(), "\n", "one line")
}

func TestSweepKeepsLiveProcessDirs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mine := filepath.Join(base, fmt.Sprintf("%s%d-abc", dirPrefix, os.Getpid()))
	other := filepath.Join(base, dirPrefix+"x-abc")
	require.NoError(t, os.Mkdir(mine, 0o700))
	require.NoError(t, os.Mkdir(other, 0o700))
	n, err := Sweep(base)
	require.NoError(t, err)
	require.Zero(t, n)
	require.DirExists(t, mine)
	require.DirExists(t, other)
}

func TestRunAsUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("RunAsUser matters only when running as root")
	}
	t.Run("nobody", func(t *testing.T) {
		t.Parallel()
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skip("no user nobody here")
		}
		cfg := testConfig(t)
		cfg.RunAsUser = "nobody"
		c, err := Start(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, c.Stop()) })
		require.Equal(t, u.Uid, strconv.Itoa(processUID(t, c.proc.Pid())))
	})
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t)
		cfg.RunAsUser = "pgsaga-no-such-user"
		_, err := Start(t.Context(), cfg)
		require.ErrorContains(t, err, "error starting postgres: running as root and no user [pgsaga-no-such-user]")
	})
}

// reachableTempDir returns a new empty directory that the postgres user can reach when we are
// root (t.TempDir's parent is private), removed at the end of the test.
func reachableTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "pglocal-test-*")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o777))
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	return dir
}

// expectedOwner is the uid postgres must run as: the postgres (or nobody) user when we are root.
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

// processUID returns the real uid of pid from /proc.
func processUID(t testing.TB, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			require.NoError(t, err)
			return uid
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return 0
}

// childPIDs lists pid's children from /proc.
func childPIDs(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// Halt takes the server away and keeps its data; Restart brings the same data back at the same
// URL, and Stop after a Halt still cleans up.
func TestHaltRestart(t *testing.T) {
	t.Parallel()
	for _, tcp := range []bool{false, true} {
		t.Run(fmt.Sprintf("tcp=%v", tcp), func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.TCP = tcp
			c, err := Start(t.Context(), cfg)
			require.NoError(t, err)
			url := c.URL("postgres")
			query[int](t, url, "WITH made AS (SELECT 42 AS n) SELECT n FROM made") // the server answers
			conn, err := pgx.Connect(t.Context(), url)
			require.NoError(t, err)
			_, err = conn.Exec(t.Context(), "CREATE TABLE kept (n int); INSERT INTO kept VALUES (42)")
			require.NoError(t, err)
			require.NoError(t, conn.Close(t.Context()))
			pid := c.proc.Pid()

			require.NoError(t, c.Halt())
			require.False(t, childproc.Alive(pid), "postmaster gone after Halt")
			_, err = pgx.Connect(t.Context(), url)
			require.Error(t, err, "no server while halted")
			require.NoError(t, c.Halt(), "halting a halted cluster does nothing")

			require.NoError(t, c.Restart(t.Context()))
			require.Equal(t, url, c.URL("postgres"))
			require.Equal(t, 42, query[int](t, url, "SELECT n FROM kept"))

			// Restart of a running server halts it first: its sessions end.
			conn, err = pgx.Connect(t.Context(), url)
			require.NoError(t, err)
			defer conn.Close(context.Background())
			require.NoError(t, c.Restart(t.Context()))
			require.Error(t, conn.Ping(t.Context()), "a session of the server before the restart is gone")
			require.Equal(t, 42, query[int](t, url, "SELECT n FROM kept"))

			require.NoError(t, c.Halt())
			require.NoError(t, c.Stop())
			require.NoDirExists(t, c.dir)
		})
	}
}
