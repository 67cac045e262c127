package failover

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/soak/internal/pgcluster"
)

// cluster is the Patroni pair every test of the package uses, in synchronous mode unless a test
// turns it off (and back on when it ends).
var cluster *pgcluster.Cluster

// binary is the pgsaga binary, built by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "pgsaga-failover-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "pgsaga")
	build := exec.Command("go", "build", "-o", binary, "github.com/pgsaga/pgsaga/cmd/pgsaga")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "error building pgsaga: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	cluster, err = pgcluster.Start(ctx, &pgcluster.Config{Synchronous: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "failover: cluster started in %s\n", time.Since(begin).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		keepLogs()
	}
	if err := cluster.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// keepLogs copies the nodes' logs (Patroni's and PostgreSQL's) into a new directory, named on
// stderr, and prints their last lines: the cluster's directory goes with Stop.
func keepLogs() {
	dir, err := os.MkdirTemp("", "pgsaga-failover-logs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	for _, n := range cluster.Nodes() {
		b, err := os.ReadFile(n.LogPath())
		if err != nil {
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, n.Name+".log"), b, 0o644)
		fmt.Fprintf(os.Stderr, "==== %s's log (Patroni and PostgreSQL), last lines\n%s\n", n.Name, tail(b, 60))
	}
	fmt.Fprintf(os.Stderr, "failover: the nodes' logs are kept in %s\n", dir)
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			lines++
			if lines > n {
				return b[i+1:]
			}
		}
	}
	return b
}

// healthyIn waits until the cluster is healthy in the mode t needs, setting it if need be (and
// setting it back to synchronous when t ends).
func healthyIn(t *testing.T, synchronous bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if cluster.Synchronous() != synchronous {
		require.NoError(t, cluster.SetSynchronous(ctx, synchronous))
		if !synchronous {
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				require.NoError(t, cluster.SetSynchronous(ctx, true))
			})
		}
	}
	_, _, err := cluster.WaitHealthy(ctx)
	require.NoError(t, err)
}

var dbSeq atomic.Int64

// newDatabase creates a database of t's own on the cluster, migrated for the payments service,
// and returns its multi-host URL and a pool on it opened the way pgsaga's commands open theirs.
func newDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("failover_%d_%d", os.Getpid(), dbSeq.Add(1))
	conn, err := pgx.Connect(ctx, cluster.URL("postgres"))
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, cluster.WaitReplayed(ctx))
	url := cluster.URL(name)
	pool, err := cli.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = migrations.Migrate(ctx, pool, payments.Migrations())
	require.NoError(t, err)
	return url, pool
}

// waitUntil polls cond until it holds, failing t after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
