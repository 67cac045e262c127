package pglocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// bouncerDirPrefix starts the name of every bouncer directory: pgsaga-bouncer-<pid>-<random>.
const bouncerDirPrefix = "pgsaga-bouncer-"

// bouncerBinary is where Debian and Ubuntu install pgbouncer, outside a non-root user's PATH.
const bouncerBinary = "/usr/sbin/pgbouncer"

// BouncerConfig configures StartBouncer.
type BouncerConfig struct {
	// ServerURL is the PostgreSQL server the bouncer forwards to: its host (or socket
	// directory), port, user and password. Every database on that server is reachable through
	// the bouncer under its own name, as that user. Required.
	ServerURL string

	// PoolMode is PgBouncer's pool_mode: "session", "transaction" or "statement".
	// Defaults to "transaction": a server connection is a client's for one transaction only.
	PoolMode string

	// DefaultPoolSize is PgBouncer's default_pool_size: server connections per database.
	// Defaults to 10.
	DefaultPoolSize int

	// MaxClientConn is PgBouncer's max_client_conn. Defaults to 1000.
	MaxClientConn int

	// Settings are extra pgbouncer.ini settings of the [pgbouncer] section, written after ours,
	// so they win. Defaults to none.
	Settings map[string]string

	// Binary is the pgbouncer program. Defaults to pgbouncer in PATH, else /usr/sbin/pgbouncer.
	Binary string

	// Launch is where the bouncer's directory (its configuration, pid file and log) goes, as
	// which user pgbouncer runs, and the logger and timeouts of StartBouncer and Stop.
	Launch
}

// WithDefaults returns a copy of c (which may be nil) with every unset field given its default.
func (c *BouncerConfig) WithDefaults() *BouncerConfig {
	out := &BouncerConfig{}
	if c != nil {
		*out = *c
	}
	if out.PoolMode == "" {
		out.PoolMode = "transaction"
	}
	if out.DefaultPoolSize == 0 {
		out.DefaultPoolSize = 10
	}
	if out.MaxClientConn == 0 {
		out.MaxClientConn = 1000
	}
	out.Launch.withDefaults()
	return out
}

func (c *BouncerConfig) validate() error {
	switch {
	case c.ServerURL == "":
		return errors.New("ServerURL is required")
	case c.PoolMode != "session" && c.PoolMode != "transaction" && c.PoolMode != "statement":
		return fmt.Errorf("PoolMode must be session, transaction or statement, got %q", c.PoolMode)
	case c.DefaultPoolSize < 1:
		return fmt.Errorf("DefaultPoolSize must be at least 1, got %d", c.DefaultPoolSize)
	case c.MaxClientConn < 1:
		return fmt.Errorf("MaxClientConn must be at least 1, got %d", c.MaxClientConn)
	}
	return c.Launch.validate()
}

// Bouncer is a running throwaway PgBouncer in front of a PostgreSQL server. Its methods are
// safe for concurrent use.
type Bouncer struct {
	dir      string // the bouncer's directory: pgbouncer.ini, userlist.txt, pid file, log
	port     int
	user     string
	database string // the server URL's database, for the readiness check
	logger   *slog.Logger
	stopTTL  time.Duration
	proc     *childproc.Process

	stopOnce sync.Once
	stopErr  error
}

// StartBouncer writes a PgBouncer configuration for cfg.ServerURL (auth_type trust, the
// server's user and password in a generated auth file, listening on 127.0.0.1 at a free port)
// and starts pgbouncer as a child of the calling process, returning once a client can reach the
// server through it. ctx bounds startup only; Stop ends the bouncer. On error nothing is left
// behind. Like the cluster's server, the bouncer gets a parent-death signal (SIGTERM, its
// immediate shutdown), and a directory left by a process that died is removed by the next
// StartBouncer in the same BaseDir.
func StartBouncer(ctx context.Context, cfg *BouncerConfig) (*Bouncer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error starting pgbouncer: invalid BouncerConfig: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	begin := time.Now()

	server, err := pgconn.ParseConfig(cfg.ServerURL)
	if err != nil {
		return nil, fmt.Errorf("error starting pgbouncer: invalid ServerURL: %w", err)
	}
	binary, err := findBouncer(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("error starting pgbouncer: %w", err)
	}
	owner, dir, err := cfg.newServerDir(bouncerDirPrefix, stopOrphanBouncer)
	if err != nil {
		return nil, fmt.Errorf("error starting pgbouncer: %w", err)
	}
	started := false
	defer removeUnless(&started, dir)
	userlist := fmt.Sprintf("%s %s\n", bouncerQuote(server.User), bouncerQuote(server.Password))
	if err := writeOwned(filepath.Join(dir, "userlist.txt"), userlist, owner); err != nil {
		return nil, fmt.Errorf("error starting pgbouncer: %w", err)
	}

	b := &Bouncer{dir: dir, user: server.User, database: server.Database, logger: cfg.Logger, stopTTL: cfg.StopTimeout}
	if b.database == "" {
		b.database = server.User
	}
	err = onFreePort("pgbouncer", func(port int) error {
		b.port = port
		ini := bouncerINI(cfg, server, dir, b.port)
		if err := writeOwned(filepath.Join(dir, "pgbouncer.ini"), ini, owner); err != nil {
			return fmt.Errorf("error starting pgbouncer: %w", err)
		}
		return b.start(ctx, binary, owner)
	})
	if err != nil {
		return nil, err
	}
	started = true
	cfg.Logger.Info("pgbouncer started", "dir", dir, "url", b.URL(b.database), "pool_mode", cfg.PoolMode,
		"user", owner.name, "took", time.Since(begin).Round(time.Millisecond))
	return b, nil
}

// bouncerINI is the pgbouncer.ini for cfg: every database of server, under its own name.
func bouncerINI(cfg *BouncerConfig, server *pgconn.Config, dir string, port int) string {
	var sb strings.Builder
	sb.WriteString("[databases]\n")
	// The wildcard entry forwards any database name to the server, under the same name.
	fmt.Fprintf(&sb, "* = host=%s port=%d\n", server.Host, server.Port)
	settings := [][2]string{
		{"listen_addr", "127.0.0.1"},
		{"listen_port", strconv.Itoa(port)},
		{"unix_socket_dir", ""}, // TCP only: no socket in a directory shared with other bouncers
		{"auth_type", "trust"},
		{"auth_file", filepath.Join(dir, "userlist.txt")},
		{"pidfile", filepath.Join(dir, "pgbouncer.pid")},
		{"pool_mode", cfg.PoolMode},
		{"default_pool_size", strconv.Itoa(cfg.DefaultPoolSize)},
		{"max_client_conn", strconv.Itoa(cfg.MaxClientConn)},
		{"server_reset_query", "DISCARD ALL"},
		{"server_check_query", "select 1"},
		{"admin_users", server.User},
		{"stats_users", server.User},
		{"log_connections", "0"},
		{"log_disconnections", "0"},
	}
	names := make([]string, 0, len(cfg.Settings))
	for name := range cfg.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		settings = append(settings, [2]string{name, cfg.Settings[name]})
	}
	sb.WriteString("\n[pgbouncer]\n")
	for _, s := range settings {
		fmt.Fprintf(&sb, "%s = %s\n", s[0], s[1])
	}
	return sb.String()
}

// bouncerQuote quotes s for pgbouncer's auth file: in double quotes, a double quote doubled.
func bouncerQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// writeOwned writes content to path, readable by the owner only.
func writeOwned(path, content string, o owner) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return o.chown(path)
}

// findBouncer returns binary, or pgbouncer in PATH, or Debian's /usr/sbin/pgbouncer.
func findBouncer(binary string) (string, error) {
	if binary != "" {
		return binary, nil
	}
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if info, err := os.Stat(bouncerBinary); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
		return bouncerBinary, nil
	}
	return "", fmt.Errorf("no pgbouncer found (looked in PATH and %s): install pgbouncer (Debian/Ubuntu: apt-get install pgbouncer)", bouncerBinary)
}

// start starts pgbouncer in the foreground and waits until a query reaches the server through
// it. On error the bouncer is stopped again.
func (b *Bouncer) start(ctx context.Context, binary string, owner owner) error {
	proc, err := program{name: "pgbouncer", binary: binary, args: []string{filepath.Join(b.dir, "pgbouncer.ini")},
		dir: b.dir, log: b.logPath(), stop: syscall.SIGTERM, ready: b.reachesServer, readyTimeout: 2 * time.Second}.start(ctx, owner)
	if err != nil {
		return err
	}
	b.proc = proc
	return nil
}

// reachesServer pings the server through the bouncer on one connection.
func (b *Bouncer) reachesServer(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, b.URL(b.database))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// URL returns a connection URL for database dbname through the bouncer, as the server's user.
func (b *Bouncer) URL(dbname string) string {
	u := url.URL{Scheme: "postgres", User: url.User(b.user), Host: "127.0.0.1:" + strconv.Itoa(b.port),
		Path: "/" + dbname, RawQuery: "sslmode=disable"}
	return u.String()
}

// Dir returns the bouncer's directory: pgbouncer.ini, userlist.txt, its pid file and its log
// (pgbouncer.log). Stop removes it.
func (b *Bouncer) Dir() string { return b.dir }

func (b *Bouncer) logPath() string { return filepath.Join(b.dir, "pgbouncer.log") }

// Log returns the end of the bouncer's log, for a test's failure message.
func (b *Bouncer) Log() string { return logTail(b.logPath()) }

// Stop shuts the bouncer down (SIGTERM, its immediate shutdown: client connections are closed;
// SIGKILL after BouncerConfig.StopTimeout) and removes its directory. It is idempotent: later
// calls return the first call's result. It reports an error if the bouncer had exited before.
func (b *Bouncer) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = b.stop() })
	return b.stopErr
}

func (b *Bouncer) stop() error {
	var errs []error
	if !b.proc.Running() {
		errs = append(errs, fmt.Errorf("pgbouncer had exited before Stop (%v); its log:\n%s", b.proc.Err(), b.Log()))
	} else if b.proc.Stop(syscall.SIGTERM, b.stopTTL) {
		errs = append(errs, fmt.Errorf("pgbouncer did not exit within %s: killed", b.stopTTL))
	}
	if err := os.RemoveAll(b.dir); err != nil {
		errs = append(errs, fmt.Errorf("removing the bouncer directory: %w", err))
	}
	b.logger.Info("pgbouncer stopped", "dir", b.dir)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("error stopping pgbouncer: %w", err)
	}
	return nil
}

// sweepBouncers removes the bouncer directories under baseDir ("pgsaga-bouncer-<pid>-*") whose
// owning process is gone, as Sweep does the clusters'. It returns how many it removed.
func sweepBouncers(baseDir string) (int, error) {
	return childproc.Sweep(baseDir, bouncerDirPrefix, stopOrphanBouncer)
}

// stopOrphanBouncer reports whether the pgbouncer recorded in dir's pid file still runs, and if
// it runs on dir's configuration sends it SIGTERM. A bouncer still running from the directory of
// a dead process is one without a parent-death signal: the directory is kept for a later sweep.
func stopOrphanBouncer(dir string) (running bool) {
	return stopOrphan(filepath.Join(dir, "pgbouncer.pid"), dir, syscall.SIGTERM)
}
