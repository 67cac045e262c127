package sagatest

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/migrations"
)

// EnvDatabaseURL names the environment variable that points a test binary's databases at an
// existing server, whose user may create databases: PGSAGA_TEST_DATABASE_URL=postgres://…
// Without it, the first NewDB starts a throwaway PostgreSQL (initdb and postgres from PATH or
// /usr/lib/postgresql/*/bin), which Main stops when the tests end.
const EnvDatabaseURL = "PGSAGA_TEST_DATABASE_URL"

// DBOpts say what every test database of a binary starts with.
type DBOpts struct {
	// Migrations are the options each database is migrated with (migrations.Migrate): pass your
	// service's migration lines. Defaults to nil: pgsaga's and River's tables.
	Migrations *migrations.MigrateOpts
	// Setup runs after the migrations, for tables or rows every test needs that are no
	// migration. Defaults to none.
	Setup func(ctx context.Context, pool *pgxpool.Pool) error
}

// Main runs a test binary whose tests use NewDB or OpenDB; call it from TestMain:
//
//	func TestMain(m *testing.M) {
//		sagatest.Main(m, &sagatest.DBOpts{Migrations: &migrations.MigrateOpts{Lines: []migrations.Line{shopLine}}})
//	}
//
// It runs the tests, then stops the server it started (or, on the server of
// EnvDatabaseURL, drops the template it made), and exits with the tests' code. The databases
// are made once per binary, migrated in a template, and cloned for each test: migrating costs
// once, a test's database a CREATE DATABASE.
func Main(m *testing.M, opts *DBOpts) {
	var o DBOpts
	if opts != nil {
		o = *opts
	}
	dbtest.Main(m, &dbtest.Opts{Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
		if _, err := migrations.Migrate(ctx, pool, o.Migrations); err != nil {
			return err
		}
		if o.Setup != nil {
			return o.Setup(ctx, pool)
		}
		return nil
	}})
}

// DB is a throwaway database: migrated as Main's DBOpts say, its own to one test.
type DB struct {
	// URL connects to the database, as a superuser of the throwaway server (or as the user of
	// EnvDatabaseURL).
	URL string
	// Pool is a pool of at most 8 connections on the database.
	Pool *pgxpool.Pool
	// Name is the database's name, unique to the test binary's process and the test.
	Name string

	opened *dbtest.DB // for Close, from OpenDB
}

// errNoMain is the error of NewDB and OpenDB in a binary whose TestMain does not call Main.
var errNoMain = errors.New("sagatest: call sagatest.Main(m, opts) from TestMain first")

// NewDB returns a database of t's own, dropped with its pool when t ends, so tests that call
// t.Parallel() never see each other's rows:
//
//	func TestOrder(t *testing.T) {
//		t.Parallel()
//		db := sagatest.NewDB(t)
//		client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: ops})
//		…
//	}
//
// It fails t when there is no server, saying why and how to get one.
func NewDB(t testing.TB) *DB {
	t.Helper()
	if !dbtest.Started() {
		t.Fatal(errNoMain)
	}
	db := dbtest.NewDB(t)
	return &DB{URL: db.URL, Pool: db.Pool, Name: db.Name}
}

// OpenDB is NewDB for code that has no testing.TB, such as an Example function: label goes
// into the database's name. Close drops the database.
func OpenDB(ctx context.Context, label string) (*DB, error) {
	if !dbtest.Started() {
		return nil, errNoMain
	}
	db, err := dbtest.OpenDB(ctx, label)
	if err != nil {
		return nil, err
	}
	return &DB{URL: db.URL, Pool: db.Pool, Name: db.Name, opened: db}, nil
}

// Close closes the pool of a database from OpenDB and drops the database. A database from
// NewDB is closed when its test ends; Close does nothing for it.
func (db *DB) Close() error {
	if db.opened == nil {
		return nil
	}
	return db.opened.Close()
}
