// Command retention measures retention GC and the request path at size, each on a throwaway
// PostgreSQL (durable: fsync on, on /dev/shm when it can, TCP on loopback, 256MB of shared
// buffers) unless -url names a database. Run from bench/:
//
//	go run ./retention cycles -n 150000 -mode older-than   # GC cycles: insert, GC, VACUUM
//	go run ./retention tombstones -n 3000000               # bytes per tombstone, their expiry
//	go run ./retention serve                                # a throwaway server, until Ctrl-C
//	go run ./retention fill -url URL -n 10000000            # completed keys, both sides
//	go run ./retention wal -url URL                         # WAL bytes per request
//
// README.md says what each part measures and how to read its figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/migrations"
)

const usage = `usage: retention <part> [flags]
parts:
  cycles      GC cycles: each inserts a generation of completed keys, GCs the one before, VACUUMs
  tombstones  bytes per tombstone against bytes per key; expiry of tombstones in bulk
  serve       start a throwaway PostgreSQL and print its URL; stop it on Ctrl-C
  fill        fill a database with completed keys, pgsaga's and the hand-written baseline's
  wal         WAL bytes per request of pgsaga's paths and the hand-written ones
Run "retention <part> -h" for a part's flags.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	parts := map[string]func(ctx context.Context, args []string) error{
		"cycles": runCycles, "tombstones": runTombstones, "serve": runServe, "fill": runFill, "wal": runWAL,
	}
	part, ok := parts[os.Args[1]]
	if !ok {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := part(ctx, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "retention:", err)
		os.Exit(1)
	}
}

// serverConfig is how every part's throwaway server runs: as the side-by-side harness runs
// PostgreSQL, as a production server does (durable, over TCP), with settings on top.
func serverConfig(settings serverSettings) *pglocal.Config {
	cfg := &pglocal.Config{Fsync: true, TCP: true, Settings: map[string]string{"shared_buffers": "256MB"}}
	for name, value := range settings {
		cfg.Settings[name] = value
	}
	return cfg
}

// serverSettings are a throwaway server's extra settings, from -set name=value flags.
type serverSettings map[string]string

func (s serverSettings) String() string { return fmt.Sprint(map[string]string(s)) }

func (s serverSettings) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	s[name] = value
	return nil
}

// database opens url, or when it is empty a throwaway server of its own with settings,
// migrated to the latest schema. close closes the pool and stops the server it started.
func database(ctx context.Context, url string, settings serverSettings) (pool *pgxpool.Pool, close func(), err error) {
	stopServer := func() {}
	if url == "" {
		cluster, err := pglocal.Start(ctx, serverConfig(settings))
		if err != nil {
			return nil, nil, err
		}
		release := cluster.StopOnSignal()
		stopServer = func() { release(); _ = cluster.Stop() }
		url = cluster.URL("postgres")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		stopServer()
		return nil, nil, err
	}
	cfg.MaxConns = 20
	pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		stopServer()
		return nil, nil, err
	}
	if _, err := migrations.Migrate(ctx, pool, nil); err != nil {
		pool.Close()
		stopServer()
		return nil, nil, fmt.Errorf("error migrating: %w", err)
	}
	return pool, func() { pool.Close(); stopServer() }, nil
}

// runServe starts a throwaway server, prints its URL and waits for SIGINT or SIGTERM, so that
// fill, wal and the side-by-side harness can share one database.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cluster, err := pglocal.Start(ctx, serverConfig(nil))
	if err != nil {
		return err
	}
	defer func() { _ = cluster.Stop() }()
	fmt.Println(cluster.URL("postgres"))
	<-ctx.Done()
	return nil
}
