package perflab

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// labFlag turns the experiments on: they take minutes and print tables rather than assert.
var labFlag = flag.Bool("lab", false, "run the experiments (TestLab…), not only the benchmarks")

// server is the binary's PostgreSQL: started on first use, stopped by TestMain.
var server struct {
	cluster   *pglocal.Cluster
	postmastr int
	admin     *pgxpool.Pool
	seq       atomic.Int64
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if server.admin != nil {
		server.admin.Close()
	}
	if server.cluster != nil {
		if err := server.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// startServer starts the cluster the way the side-by-side harness runs PostgreSQL (durability
// on, on /dev/shm when it can, TCP on loopback, 256MB of shared buffers), with pg_stat_statements.
func startServer(tb testing.TB) {
	tb.Helper()
	if server.cluster != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pglocal.Start(ctx, &pglocal.Config{Fsync: true, TCP: true, Settings: map[string]string{
		"shared_buffers":                    "256MB",
		"shared_preload_libraries":          "pg_stat_statements",
		"pg_stat_statements.track":          "all",
		"pg_stat_statements.track_utility":  "on",
		"pg_stat_statements.track_planning": "on",
		"track_io_timing":                   "on",
	}})
	if err != nil {
		tb.Fatal(err)
	}
	server.cluster = c
	pidFile, err := os.ReadFile(filepath.Join(c.Dir(), "data", "postmaster.pid"))
	if err != nil {
		tb.Fatal(err)
	}
	first, _, _ := strings.Cut(string(pidFile), "\n")
	if server.postmastr, err = strconv.Atoi(strings.TrimSpace(first)); err != nil {
		tb.Fatal(err)
	}
	if server.admin, err = pool(ctx, c.URL("postgres"), 2, nil); err != nil {
		tb.Fatal(err)
	}
}

// newDatabase creates an empty database and returns a pool on it of at most maxConns connections,
// with tracer (which may be nil) on its connections. It is dropped when tb ends.
func newDatabase(tb testing.TB, maxConns int32, tracer pgx.QueryTracer) *pgxpool.Pool {
	return newDatabaseWith(tb, maxConns, tracer, nil)
}

// newDatabaseWith is newDatabase with configure (which may be nil) applied to the pool's config.
func newDatabaseWith(tb testing.TB, maxConns int32, tracer pgx.QueryTracer, configure func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	startServer(tb)
	ctx := context.Background()
	name := fmt.Sprintf("lab_%d", server.seq.Add(1))
	if _, err := server.admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	p, err := poolWith(ctx, server.cluster.URL(name), maxConns, tracer, configure)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Close()
		_, _ = server.admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return p
}

func pool(ctx context.Context, url string, maxConns int32, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	return poolWith(ctx, url, maxConns, tracer, nil)
}

func poolWith(ctx context.Context, url string, maxConns int32, tracer pgx.QueryTracer, configure func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.Tracer = tracer
	if configure != nil {
		configure(cfg)
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// tripCounter counts round trips: a statement sent alone or a batch is one. It does no more, so
// that it costs nothing in a profile.
type tripCounter struct{ n atomic.Int64 }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// cpu is a reading of the CPU time spent so far by this process (the client) and by the
// cluster's processes (the server).
type cpu struct{ client, server time.Duration }

func readCPU() cpu {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return cpu{client: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), server: serverCPU()}
}

func (c cpu) sub(o cpu) cpu { return cpu{client: c.client - o.client, server: c.server - o.server} }

// serverCPU is the CPU time of the postmaster and its live children (schedstat, in ns), plus
// what the postmaster's exited children used (cutime+cstime, in clock ticks).
func serverCPU() time.Duration {
	pm := server.postmastr
	if pm == 0 {
		return 0
	}
	var total time.Duration
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces): state ppid …
		s := string(stat)
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		ppid, _ := strconv.Atoi(rest[1])
		if pid != pm && ppid != pm {
			continue
		}
		total += schedstat(pid)
		if pid == pm {
			// rest[0] is field 3 (state); cutime and cstime are fields 16 and 17.
			cu, _ := strconv.ParseInt(rest[13], 10, 64)
			cs, _ := strconv.ParseInt(rest[14], 10, 64)
			total += time.Duration(cu+cs) * (time.Second / 100)
		}
	}
	return total
}

// schedstat is the CPU time a process has used (0 once it has exited).
func schedstat(pid int) time.Duration {
	sched, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0
	}
	ns, _ := strconv.ParseInt(strings.Fields(string(sched))[0], 10, 64)
	return time.Duration(ns)
}
