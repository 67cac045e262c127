// Package pglocal runs a throwaway PostgreSQL cluster, for the tests and for `pgsaga demo`, and
// a throwaway PgBouncer in front of one, for the tests that run through a transaction pooler.
//
// Start runs initdb in a new directory under Config.BaseDir and starts the postgres server as a
// child of the calling process; Stop shuts the server down and removes the directory.
// StartBouncer does the same for pgbouncer (pool_mode transaction by default, auth_type trust,
// a free port on 127.0.0.1), with the same guarantees below.
//
// Guarantees:
//   - The server is our child. On Linux the kernel sends it SIGQUIT (immediate shutdown) when the
//     thread that started it dies, so a process killed even with SIGKILL leaves no server running.
//   - Nothing is left after Stop: no process, no directory. A directory left by a process that died
//     without calling Stop is named pgsaga-pg-<pid>-*; the next Start in the same BaseDir removes
//     it (see Sweep).
//   - When the calling process is root, initdb and postgres run as an unprivileged user
//     (Config.RunAsUser), because PostgreSQL refuses to run as root.
//   - The server listens on a Unix socket in the cluster's directory (and on 127.0.0.1 when
//     Config.TCP is set); authentication is trust, superuser "postgres".
//   - With Config.Fsync false (the default) data does not survive a machine crash: for tests only.
package pglocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// dirPrefix starts the name of every cluster directory: pgsaga-pg-<pid>-<random>.
const dirPrefix = "pgsaga-pg-"

// Config configures Start. The zero value is usable.
type Config struct {
	// Launch is where the cluster's directory goes, as which user initdb and postgres run, and
	// the logger and timeouts of Start and Stop.
	Launch

	// BinDir is the directory holding the initdb and postgres binaries.
	// Defaults to the directory of initdb in PATH, else the highest-versioned
	// /usr/lib/postgresql/*/bin.
	BinDir string

	// Fsync keeps the server's durability settings (fsync, synchronous_commit, full_page_writes)
	// at PostgreSQL's defaults. Defaults to false: all three off, fast and crash-unsafe.
	Fsync bool

	// TCP makes the server also listen on 127.0.0.1 at a free port, and URL use it.
	// Defaults to false: a Unix socket in the cluster's directory only.
	TCP bool

	// MaxConnections is the server's max_connections. Defaults to 200.
	MaxConnections int

	// Settings are extra server settings, passed as -c name=value after ours, so they win.
	// Defaults to none.
	Settings map[string]string
}

// WithDefaults returns a copy of c (which may be nil) with every unset field given its default.
func (c *Config) WithDefaults() *Config {
	out := &Config{}
	if c != nil {
		*out = *c
	}
	out.Launch.withDefaults()
	if out.MaxConnections == 0 {
		out.MaxConnections = 200
	}
	return out
}

func (c *Config) validate() error {
	if err := c.Launch.validate(); err != nil {
		return err
	}
	if c.MaxConnections < 1 {
		return fmt.Errorf("MaxConnections must be at least 1, got %d", c.MaxConnections)
	}
	return nil
}

// Cluster is a running throwaway PostgreSQL server. Its methods are safe for concurrent use.
type Cluster struct {
	dir     string // cluster directory: data/, the socket, postgres.log
	port    int
	tcp     bool
	logger  *slog.Logger
	stopTTL time.Duration

	// What Restart needs to start the server again.
	bins  binaries
	owner owner
	cfg   *Config

	mu     sync.Mutex         // guards proc and halted
	proc   *childproc.Process // the postmaster
	halted bool               // shut down by Halt, directory kept

	stopOnce sync.Once
	stopErr  error
}

// Start creates a new cluster and starts its server, returning once the server accepts
// connections. ctx bounds startup only: cancelling it later does not stop the server; Stop does.
// On error nothing is left behind: no process, no directory.
func Start(ctx context.Context, cfg *Config) (*Cluster, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error starting postgres: invalid Config: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	begin := time.Now()

	bins, err := findBinaries(cfg.BinDir, debianBinDirs)
	if err != nil {
		return nil, fmt.Errorf("error starting postgres: %w", err)
	}
	owner, dir, err := cfg.newServerDir(dirPrefix, stopOrphanServer)
	if err != nil {
		return nil, fmt.Errorf("error starting postgres: %w", err)
	}
	started := false
	defer removeUnless(&started, dir)
	// The server's socket lives in dir; Unix socket paths hold at most 107 bytes.
	if sock := filepath.Join(dir, ".s.PGSQL.65535"); len(sock) > 107 {
		return nil, fmt.Errorf("error starting postgres: socket path %s is longer than 107 bytes: use a shorter Config.BaseDir", sock)
	}

	if err := initdb(ctx, bins, owner, dir); err != nil {
		return nil, err
	}
	initdbDone := time.Now()

	c := &Cluster{dir: dir, port: 5432, tcp: cfg.TCP, logger: cfg.Logger, stopTTL: cfg.StopTimeout,
		bins: bins, owner: owner, cfg: cfg}
	if !cfg.TCP {
		err = c.startServer(ctx, bins, owner, cfg)
	} else {
		err = onFreePort("postgres", func(port int) error {
			c.port = port
			return c.startServer(ctx, bins, owner, cfg)
		})
	}
	if err != nil {
		return nil, err
	}
	started = true
	cfg.Logger.Info("postgres started", "dir", dir, "url", c.URL("postgres"), "user", owner.name,
		"initdb", initdbDone.Sub(begin).Round(time.Millisecond),
		"total", time.Since(begin).Round(time.Millisecond))
	return c, nil
}

// URL returns a connection URL for database dbname on this cluster, as superuser "postgres",
// usable by pgx and psql.
func (c *Cluster) URL(dbname string) string {
	q := url.Values{}
	q.Set("sslmode", "disable")
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + dbname}
	if c.tcp {
		u.Host = "127.0.0.1:" + strconv.Itoa(c.port)
	} else {
		q.Set("host", c.dir)
		q.Set("port", strconv.Itoa(c.port))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Stop shuts the server down (fast shutdown: open sessions are ended, SIGKILL after
// Config.StopTimeout) and removes the cluster's directory. It is idempotent: later calls return
// the first call's result. It reports an error if the server had exited before Stop was called.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	begin := time.Now()
	var errs []error
	c.mu.Lock()
	if !c.halted {
		errs = append(errs, c.shutdown("Stop"))
		c.halted = true
	}
	c.mu.Unlock()
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing the cluster directory: %w", err))
	}
	c.logger.Info("postgres stopped", "dir", c.dir, "took", time.Since(begin).Round(time.Millisecond))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("error stopping postgres: %w", err)
	}
	return nil
}

// shutdown shuts the running server down (fast shutdown, SIGKILL after StopTimeout); it reports
// a server that had already exited, naming caller. c.mu must be held.
func (c *Cluster) shutdown(caller string) error {
	if !c.proc.Running() {
		return fmt.Errorf("postgres had exited before %s (%v); server log:\n%s", caller, c.proc.Err(), logTail(c.logPath()))
	}
	if c.proc.Stop(syscall.SIGINT, c.stopTTL) {
		return fmt.Errorf("postgres did not shut down within %s: killed", c.stopTTL)
	}
	return nil
}

// Halt shuts the server down as an operator's restart does (fast shutdown: open sessions are
// ended, clients see "the database system is shutting down" and then no server), and keeps the
// cluster's directory, so that Restart brings the same data back at the same URL. For tests of
// a database that goes away and comes back. Halting a halted cluster does nothing.
func (c *Cluster) Halt() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.halted {
		return nil
	}
	c.halted = true
	if err := c.shutdown("Halt"); err != nil {
		return fmt.Errorf("error halting postgres: %w", err)
	}
	c.logger.Info("postgres halted", "dir", c.dir)
	return nil
}

// Restart starts the server again on the cluster's data at the same URL, halting it first if
// it runs, and returns once it accepts connections. ctx bounds the start, as for Start. Not
// after Stop, which removed the data.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.halted {
		c.halted = true
		if err := c.shutdown("Restart"); err != nil {
			return fmt.Errorf("error restarting postgres: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	if err := c.startServer(ctx, c.bins, c.owner, c.cfg); err != nil {
		return err
	}
	c.halted = false
	c.logger.Info("postgres restarted", "dir", c.dir, "url", c.URL("postgres"))
	return nil
}

// Dir returns the cluster's directory, which holds the data directory ("data"), the server's
// log ("postgres.log") and its Unix socket. Stop removes it.
func (c *Cluster) Dir() string { return c.dir }

func (c *Cluster) logPath() string { return filepath.Join(c.dir, "postgres.log") }
func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

// serverArgs are the postgres command-line arguments for cfg.
func (c *Cluster) serverArgs(cfg *Config) []string {
	listen := ""
	if cfg.TCP {
		listen = "127.0.0.1"
	}
	settings := []string{
		"listen_addresses=" + listen,
		// Double quotes: the setting is a comma-separated list.
		"unix_socket_directories=\"" + c.dir + "\"",
		"port=" + strconv.Itoa(c.port),
		"max_connections=" + strconv.Itoa(cfg.MaxConnections),
		"shared_buffers=32MB",
		// Segments in the data directory rather than /dev/shm: a server killed with SIGKILL
		// leaves none behind once the directory is removed.
		"dynamic_shared_memory_type=mmap",
	}
	if !cfg.Fsync {
		settings = append(settings, "fsync=off", "synchronous_commit=off", "full_page_writes=off")
	}
	names := make([]string, 0, len(cfg.Settings))
	for name := range cfg.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		settings = append(settings, name+"="+cfg.Settings[name])
	}
	args := []string{"-D", c.dataDir()}
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	return args
}
