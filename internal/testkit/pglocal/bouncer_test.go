package pglocal

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// startBouncer starts a cluster and a bouncer in transaction pooling mode in front of it, both
// stopped when t ends.
func startBouncer(t *testing.T, cfg *BouncerConfig) (*Cluster, *Bouncer) {
	t.Helper()
	c, err := Start(t.Context(), testConfig(t))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	if cfg == nil {
		cfg = &BouncerConfig{}
	}
	cfg.ServerURL = c.URL("postgres")
	cfg.Logger = testConfig(t).Logger
	b, err := StartBouncer(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Stop()) })
	return c, b
}

func TestBouncerTransactionPooling(t *testing.T) {
	t.Parallel()
	c, b := startBouncer(t, &BouncerConfig{DefaultPoolSize: 2})
	pid := b.proc.Pid()
	require.Equal(t, expectedOwner(t), processUID(t, pid), "pgbouncer runs as the expected user")

	// Two clients through the bouncer: while one holds a transaction open, a setting the other
	// made outside a transaction is seen by whichever client gets its server connection next.
	// Within a transaction, a client keeps its server connection.
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(b.URL("postgres") + "&default_query_exec_mode=cache_describe&pool_max_conns=2")
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var a, b int
		if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&a); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&b); err != nil {
			return err
		}
		require.Equal(t, a, b, "one server connection for the whole transaction")
		return nil
	}))

	// The server sees the bouncer's connections, not ours.
	direct := query[int](t, c.URL("postgres"), "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND client_addr IS NULL")
	require.Positive(t, direct)

	// Transaction pooling: a session-level LISTEN does not stay with the client.
	conn, err := pgx.Connect(ctx, b.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "LISTEN bouncer_test")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "SELECT pg_notify('bouncer_test', 'x')")
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = conn.WaitForNotification(waitCtx)
	require.Error(t, err, "a LISTEN through a transaction pooler never hears a notification")
}

func TestBouncerStopRemovesEverything(t *testing.T) {
	t.Parallel()
	_, b := startBouncer(t, nil)
	pid := b.proc.Pid()
	require.FileExists(t, filepath.Join(b.Dir(), "pgbouncer.ini"))
	require.NoError(t, b.Stop())
	require.NoDirExists(t, b.Dir())
	require.False(t, childproc.Alive(pid), "pgbouncer gone after Stop")
	require.NoError(t, b.Stop(), "Stop is idempotent")
}

func TestBouncerSweepsStaleDirs(t *testing.T) {
	t.Parallel()
	base := reachableTempDir(t)
	stale := filepath.Join(base, bouncerDirPrefix+"999999999-abc")
	mine := filepath.Join(base, fmt.Sprintf("%s%d-abc", bouncerDirPrefix, os.Getpid()))
	require.NoError(t, os.Mkdir(stale, 0o700))
	require.NoError(t, os.Mkdir(mine, 0o700))
	n, err := sweepBouncers(base)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoDirExists(t, stale)
	require.DirExists(t, mine, "a live process's directory stays")
}

func TestBouncerBadConfig(t *testing.T) {
	t.Parallel()
	_, err := StartBouncer(t.Context(), &BouncerConfig{})
	require.ErrorContains(t, err, "ServerURL is required")
	_, err = StartBouncer(t.Context(), &BouncerConfig{ServerURL: "postgres://x@127.0.0.1/x", PoolMode: "fast"})
	require.ErrorContains(t, err, "PoolMode")
	_, err = StartBouncer(t.Context(), &BouncerConfig{ServerURL: "postgres://x@127.0.0.1/x", Binary: "/nonexistent/pgbouncer",
		Launch: Launch{BaseDir: t.TempDir(), StartTimeout: 5 * time.Second}})
	require.ErrorContains(t, err, "error starting pgbouncer")
}

func TestKilledProcessLeavesNoBouncer(t *testing.T) {
	t.Parallel()
	base := reachableTempDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperBaseEnv+"="+base, helperBouncerEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var pid int
	var dir string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "bouncer %d %s", &pid, &dir); err == nil {
			break
		}
		require.NotContains(t, sc.Text(), "error:")
	}
	require.NotZero(t, pid, "helper did not report a started bouncer")
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	waitGone(t, pid, 10*time.Second)

	// The directory stays behind; the next StartBouncer (here its sweep) removes it.
	require.DirExists(t, dir)
	n, err := sweepBouncers(base)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoDirExists(t, dir)
}
