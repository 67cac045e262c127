// Package dbtest gives each test its own PostgreSQL database, cloned from a migrated template.
//
// Per test binary: one server and one template database, made on the first NewDB (a binary
// whose selected tests need no database starts nothing). The server is a throwaway pglocal
// cluster, or the one in $PGSAGA_TEST_DATABASE_URL when set. Per test: NewDB clones the template
// (CREATE DATABASE … TEMPLATE) and drops the clone when the test ends, so tests that call
// t.Parallel() never see each other's rows.
//
// PooledURL reaches a test's database through PgBouncer in transaction pooling mode instead,
// started once per test binary in front of the same server (pglocal.StartBouncer) and stopped
// by Main.
//
// Guarantees:
//   - Database names are unique per process ("pgsaga_<pid>_<random>_<n>_<test>", template
//     "pgsaga_tpl_<pid>_<random>"), so several test binaries can share one server.
//   - Main stops the cluster it started and drops the template it made on a shared server, also
//     when the binary gets SIGINT or SIGTERM. A binary killed outright (SIGKILL, test timeout)
//     leaves no server running (see pglocal); on a shared server its databases stay behind.
//
// Use:
//
//	func TestMain(m *testing.M) { dbtest.Main(m, nil) }
//
//	func TestX(t *testing.T) {
//		t.Parallel()
//		db := dbtest.NewDB(t)
//		_, err := db.Pool.Exec(t.Context(), "…")
//	}
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/migrations"
)

// EnvURL names the environment variable that, when set, points the tests at an existing server
// (whose user may create databases) instead of starting a throwaway cluster.
const EnvURL = "PGSAGA_TEST_DATABASE_URL"

// Pool sizes: the machine may have 2 cores and run many parallel tests and test binaries.
const (
	adminMaxConns = 4
	testMaxConns  = 8
)

// Opts configures Main. A nil *Opts uses every default.
type Opts struct {
	// Migrate brings the template database to the schema every test database starts from.
	// Defaults to migrations.Migrate(ctx, pool, nil): River's and pgsaga's tables. NoMigrate
	// leaves the template empty.
	Migrate func(ctx context.Context, pool *pgxpool.Pool) error
}

// NoMigrate is an Opts.Migrate that leaves the template empty, for tests that migrate the
// database themselves.
func NoMigrate(ctx context.Context, pool *pgxpool.Pool) error { return nil }

// defaultMigrate applies River's and pgsaga's migrations.
func defaultMigrate(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := migrations.Migrate(ctx, pool, nil)
	return err
}

// MigrateWith is an Opts.Migrate that applies River's, pgsaga's and opts' lines (an
// application's tables, such as payments.Migrations()).
func MigrateWith(opts *migrations.MigrateOpts) func(ctx context.Context, pool *pgxpool.Pool) error {
	return func(ctx context.Context, pool *pgxpool.Pool) error {
		_, err := migrations.Migrate(ctx, pool, opts)
		return err
	}
}

// DB is a test's own database. It is dropped when the test ends.
type DB struct {
	// URL connects to the database as a superuser (or as the user of $PGSAGA_TEST_DATABASE_URL).
	URL string
	// Pool is open on the database, at most 8 connections. It is closed when the test ends.
	Pool *pgxpool.Pool
	// Name is the database's name.
	Name string

	suite *suite // for Close, on databases from OpenDB
}

// current is the state of this test binary, set by Main: NewDB has only a testing.TB to go on.
var current *suite

// suite is one test binary's server and template database.
type suite struct {
	opts   Opts
	prefix string // "pgsaga_<pid>_<random>": unique per process, also across hosts sharing a server
	seq    atomic.Int64

	once     sync.Once
	setupErr error
	cluster  *pglocal.Cluster // nil when using EnvURL
	release  func()           // stops StopOnSignal
	adminURL string
	admin    *pgxpool.Pool
	template string

	bouncerOnce sync.Once
	bouncerErr  error
	bouncer     *pglocal.Bouncer // started by the first PooledURL
}

// Main runs the tests of a package that uses NewDB; call it from TestMain. It runs m.Run,
// then stops the cluster (or drops the template on a shared server), then exits with m.Run's
// code (or 1 if cleaning up failed).
func Main(m *testing.M, opts *Opts) {
	s := &suite{prefix: fmt.Sprintf("pgsaga_%d_%s", os.Getpid(), randomHex(3))}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Migrate == nil {
		s.opts.Migrate = defaultMigrate
	}
	current = s
	code := m.Run()
	if err := s.close(); err != nil {
		fmt.Fprintf(os.Stderr, "dbtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// NewDB creates a database for t, a clone of the migrated template, and drops it when t ends.
// It fails t if there is no server: the error says why and how to get one.
func NewDB(t testing.TB) *DB {
	t.Helper()
	s := current
	if s == nil {
		t.Fatal("dbtest.NewDB: call dbtest.Main(m, opts) from TestMain first")
	}
	s.once.Do(func() { s.setupErr = s.setup() })
	if s.setupErr != nil {
		t.Fatalf("dbtest: %v", s.setupErr)
	}

	name := s.dbName(t.Name())
	ctx := t.Context()
	_, err := s.admin.Exec(ctx, "CREATE DATABASE "+quote(name)+" TEMPLATE "+quote(s.template))
	if err != nil {
		t.Fatalf("dbtest: error creating database %s: %v", name, err)
	}
	db := &DB{URL: withDatabase(s.adminURL, name), Name: name}
	t.Cleanup(func() { s.drop(t, db) })

	db.Pool, err = newPool(ctx, db.URL, testMaxConns)
	if err != nil {
		t.Fatalf("dbtest: error opening a pool on %s: %v", name, err)
	}
	return db
}

// drop closes db's pool and drops db, ending any session the test left open.
func (s *suite) drop(t testing.TB, db *DB) {
	if db.Pool != nil {
		closed := make(chan struct{})
		go func() { db.Pool.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			// The pool waits for acquired connections: the test leaked one. FORCE below ends it.
			t.Errorf("dbtest: pool on %s still has acquired connections 10s after the test ended: release them", db.Name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quote(db.Name)+" WITH (FORCE)"); err != nil {
		t.Errorf("dbtest: error dropping database %s: %v", db.Name, err)
	}
}

// setup starts the server (or connects to EnvURL) and builds the template.
func (s *suite) setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if u := os.Getenv(EnvURL); u != "" {
		s.adminURL = u
	} else {
		c, err := pglocal.Start(ctx, nil)
		if err != nil {
			return fmt.Errorf("%w (or set %s to a server where this user may create databases)", err, EnvURL)
		}
		s.cluster = c
		s.release = c.StopOnSignal()
		s.adminURL = c.URL("postgres")
	}
	admin, err := newPool(ctx, s.adminURL, adminMaxConns)
	if err != nil {
		return fmt.Errorf("error connecting to %s: %w", redact(s.adminURL), err)
	}
	s.admin = admin

	s.template = strings.Replace(s.prefix, "pgsaga_", "pgsaga_tpl_", 1)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quote(s.template)); err != nil {
		return fmt.Errorf("error creating template database %s: %w", s.template, err)
	}
	// Cloning needs the template to have no session: this pool is closed (all its connections
	// ended) before the first CREATE DATABASE … TEMPLATE.
	pool, err := newPool(ctx, withDatabase(s.adminURL, s.template), adminMaxConns)
	if err != nil {
		return fmt.Errorf("error connecting to template database %s: %w", s.template, err)
	}
	defer pool.Close()
	if err := s.opts.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("error migrating template database %s: %w", s.template, err)
	}
	return nil
}

// close releases what setup made: the bouncer, the cluster, or on a shared server the template.
func (s *suite) close() error {
	if s.release != nil {
		s.release()
	}
	var errs []error
	if s.bouncer != nil {
		if err := s.bouncer.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.admin != nil {
		if s.cluster == nil && s.template != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quote(s.template)+" WITH (FORCE)"); err != nil {
				errs = append(errs, fmt.Errorf("error dropping template database %s: %w", s.template, err))
			}
			cancel()
		}
		s.admin.Close()
	}
	if s.cluster != nil {
		if err := s.cluster.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName returns a new database name: the process prefix, a sequence number, and as much of the
// test's name as fits PostgreSQL's 63-byte limit, for whoever inspects a shared server.
func (s *suite) dbName(testName string) string {
	name := fmt.Sprintf("%s_%d_%s", s.prefix, s.seq.Add(1), unsafeChars.ReplaceAllString(strings.ToLower(testName), "_"))
	const maxLen = 63
	if len(name) > maxLen {
		name = name[:maxLen]
	}
	return strings.TrimRight(name, "_")
}

// newPool opens a pool of at most maxConns connections on url and checks that it connects.
func newPool(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// withDatabase returns connString (a URL or keyword/value string) naming database dbname.
func withDatabase(connString, dbname string) string {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err == nil {
			u.Path = "/" + dbname
			u.RawPath = ""
			return u.String()
		}
	}
	// Keyword/value: a later keyword overrides an earlier one.
	return connString + " dbname=" + dbname
}

// redact hides the password in a URL, for error messages.
func redact(connString string) string {
	if u, err := url.Parse(connString); err == nil && u.User != nil {
		return u.Redacted()
	}
	return "$" + EnvURL
}

func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// OpenDB creates a database for code that has no testing.TB (an Example function): a clone of
// the migrated template, like NewDB's. Close drops it.
func OpenDB(ctx context.Context, label string) (*DB, error) {
	s := current
	if s == nil {
		return nil, errors.New("dbtest.OpenDB: call dbtest.Main(m, opts) from TestMain first")
	}
	s.once.Do(func() { s.setupErr = s.setup() })
	if s.setupErr != nil {
		return nil, fmt.Errorf("dbtest: %w", s.setupErr)
	}
	name := s.dbName(label)
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+quote(name)+" TEMPLATE "+quote(s.template)); err != nil {
		return nil, fmt.Errorf("dbtest: error creating database %s: %w", name, err)
	}
	db := &DB{URL: withDatabase(s.adminURL, name), Name: name, suite: s}
	pool, err := newPool(ctx, db.URL, testMaxConns)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("dbtest: error opening a pool on %s: %w", name, err)
	}
	db.Pool = pool
	return db, nil
}

// Close closes the pool of a database from OpenDB and drops the database.
func (db *DB) Close() error {
	if db.Pool != nil {
		db.Pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := db.suite.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quote(db.Name)+" WITH (FORCE)")
	return err
}

// Bouncer pool sizes: fewer server connections per database than a test's pool has clients,
// so that clients share server connections and anything that leaks session state across
// transactions shows.
const (
	bouncerPoolSize = 4
	pooledMaxConns  = testMaxConns
)

// PooledURL returns a URL that reaches db through the test binary's PgBouncer in transaction
// pooling mode (4 server connections per database), starting it on first use. Each query
// parameter in params (such as "default_query_exec_mode=cache_describe") is added to the URL.
func (db *DB) PooledURL(t testing.TB, params ...string) string {
	t.Helper()
	s := db.suite
	if s == nil {
		s = current
	}
	s.bouncerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.bouncer, s.bouncerErr = pglocal.StartBouncer(ctx, &pglocal.BouncerConfig{
			ServerURL: s.adminURL, DefaultPoolSize: bouncerPoolSize})
	})
	if s.bouncerErr != nil {
		t.Fatalf("dbtest: %v", s.bouncerErr)
	}
	u := s.bouncer.URL(db.Name)
	for _, p := range params {
		u += "&" + p
	}
	return u
}

// PooledPool opens a pool of at most 8 connections on PooledURL(t, params...) and closes it
// when t ends.
func (db *DB) PooledPool(t testing.TB, params ...string) *pgxpool.Pool {
	t.Helper()
	pool, err := newPool(t.Context(), db.PooledURL(t, params...), pooledMaxConns)
	if err != nil {
		t.Fatalf("dbtest: error opening a pool through PgBouncer on %s: %v", db.Name, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// BouncerLog is the end of the bouncer's log, for a failure message ("" before PooledURL).
func BouncerLog() string {
	if current == nil || current.bouncer == nil {
		return ""
	}
	return current.bouncer.Log()
}

// Started reports whether Main runs this test binary, so that a caller can say what to do when
// it does not.
func Started() bool { return current != nil }
