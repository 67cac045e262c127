// Package migrations applies and checks pgsaga's schema (and River's, which the worker needs).
//
// Migrations are numbered SQL files, NNN_name.up.sql with a NNN_name.down.sql beside it, embedded
// in the binary and grouped in lines: pgsaga's own line, plus any line an application adds (the
// example payments service adds its tables this way). Each version is applied in its own
// transaction together with its row in pgsaga_migration, so a failure leaves the schema at the
// last whole version. Runs are serialised with an advisory lock, so two processes migrating at
// once apply every version exactly once. Migrating an up-to-date database changes nothing.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/pgsaga/pgsaga/internal/listencheck"
)

//go:embed sql/*.sql
var pgsagaSQL embed.FS

// Line is an ordered set of migrations with its own version numbers.
type Line struct {
	// Name identifies the line in pgsaga_migration, such as "pgsaga" or "payments".
	Name string
	// FS holds the NNN_name.up.sql and NNN_name.down.sql files at its root.
	FS fs.FS
}

// pgsagaLine is the line that creates pgsaga's own tables.
func pgsagaLine() Line {
	sub, err := fs.Sub(pgsagaSQL, "sql")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	return Line{Name: "pgsaga", FS: sub}
}

// migration is one version of a line.
type migration struct {
	Line    string
	Version int
	Name    string
	Up      string
	Down    string
}

// MigrateOpts are optional settings for Migrate and Validate.
type MigrateOpts struct {
	// Lines are applied after River's migrations and pgsaga's own line, in order.
	Lines []Line
	// SkipRiver leaves River's tables alone (for applications that migrate River themselves).
	SkipRiver bool
}

// Applied is a migration that a run applied.
type Applied struct {
	Line     string
	Version  int
	Name     string
	Duration time.Duration
}

// MigrateResult says what a run did. An empty Applied means the database was already current.
type MigrateResult struct {
	Applied      []Applied
	RiverApplied []int
}

// ErrMissingVersion is returned by Validate when the database lacks a version the binary has.
var ErrMissingVersion = errors.New("database schema is behind: run `pgsaga migrate`")

// errNoSession is Migrate's refusal of a pool whose connections are not sessions of their own
// (a pooler in transaction pooling mode): its advisory lock would stay behind on a server
// session another client gets next.
var errNoSession = errors.New("migrations: the pool's connections are not sessions of their own")

// advisoryLockKey serialises migration runs across processes ("pgsaga-m" in ASCII).
const advisoryLockKey int64 = 0x7067736167612d6d

const createMigrationTable = `
CREATE TABLE IF NOT EXISTS pgsaga_migration (
    line       text        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pgsaga_migration_pkey PRIMARY KEY (line, version)
)`

var fileName = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// load reads a line's migrations, checking that versions start at 1, have no gaps and each has
// both an up and a down file.
func load(line Line) ([]migration, error) {
	entries, err := fs.ReadDir(line.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("error reading migrations of line %q: %w", line.Name, err)
	}
	byVersion := map[int]*migration{}
	for _, entry := range entries {
		match := fileName.FindStringSubmatch(entry.Name())
		if match == nil {
			continue
		}
		version, _ := strconv.Atoi(match[1])
		sql, err := fs.ReadFile(line.FS, path.Clean(entry.Name()))
		if err != nil {
			return nil, fmt.Errorf("error reading migration %s: %w", entry.Name(), err)
		}
		m := byVersion[version]
		if m == nil {
			m = &migration{Line: line.Name, Version: version, Name: match[2]}
			byVersion[version] = m
		} else if m.Name != match[2] {
			return nil, fmt.Errorf("line %q version %d has two names: %q and %q", line.Name, version, m.Name, match[2])
		}
		if match[3] == "up" {
			m.Up = string(sql)
		} else {
			m.Down = string(sql)
		}
	}
	migrations := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		migrations = append(migrations, *m)
	}
	sort.Slice(migrations, func(i, j int) bool { return migrations[i].Version < migrations[j].Version })
	for i, m := range migrations {
		if m.Version != i+1 {
			return nil, fmt.Errorf("line %q has a gap: version %d follows %d", line.Name, m.Version, i)
		}
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("line %q version %03d_%s needs both an up and a down file", line.Name, m.Version, m.Name)
		}
	}
	return migrations, nil
}

func linesOf(opts *MigrateOpts) []Line {
	return append([]Line{pgsagaLine()}, opts.Lines...)
}

// Migrate applies River's migrations (unless skipped), then every pending version of pgsaga's
// line and of opts.Lines. Running it on a current database is a no-op that only reads. Applying
// versions takes a session's lock: through a pooler in transaction pooling mode it then refuses,
// before changing anything, with an error that says to migrate on a direct connection or through
// session pooling.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts *MigrateOpts) (*MigrateResult, error) {
	if opts == nil {
		opts = &MigrateOpts{}
	}
	var lines [][]migration
	for _, line := range linesOf(opts) {
		migrations, err := load(line)
		if err != nil {
			return nil, err
		}
		lines = append(lines, migrations)
	}

	// An up-to-date database needs no lock, and only reads: that works through any pooler.
	if Validate(ctx, pool, opts) == nil {
		return &MigrateResult{}, nil
	}
	// The lock below is a session's: a LISTEN that hears its own notification is a session
	// that lasts from one transaction to the next, which a transaction pooler's is not.
	heard, err := listencheck.Heard(ctx, pool, pool)
	switch {
	case err != nil:
		return nil, fmt.Errorf("error connecting to migrate: %w", err)
	case !heard:
		return nil, fmt.Errorf("%w (a LISTEN did not hear its own notification: a pooler in transaction pooling mode?): "+
			"migrate holds an advisory lock across its transactions; run it on a direct connection, or through session pooling", errNoSession)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error connecting to migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", advisoryLockKey); err != nil {
		return nil, fmt.Errorf("error taking the migration lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must be released even when ctx was cancelled.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", advisoryLockKey)
	}()

	result := &MigrateResult{}
	if !opts.SkipRiver {
		migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
		if err != nil {
			return nil, fmt.Errorf("error preparing River's migrations: %w", err)
		}
		riverResult, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
		if err != nil {
			return nil, fmt.Errorf("error applying River's migrations: %w", err)
		}
		for _, v := range riverResult.Versions {
			result.RiverApplied = append(result.RiverApplied, v.Version)
		}
	}

	if _, err := conn.Exec(ctx, createMigrationTable); err != nil {
		return nil, fmt.Errorf("error creating pgsaga_migration: %w", err)
	}
	for _, migrations := range lines {
		for _, m := range migrations {
			start := time.Now()
			applied, err := applyOne(ctx, conn.Conn(), m)
			if err != nil {
				return result, err
			}
			if applied {
				result.Applied = append(result.Applied, Applied{Line: m.Line, Version: m.Version, Name: m.Name, Duration: time.Since(start)})
			}
		}
	}
	return result, nil
}

// applyOne applies m in one transaction unless it is already recorded.
func applyOne(ctx context.Context, conn *pgx.Conn, m migration) (bool, error) {
	applied := false
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx,
			`INSERT INTO pgsaga_migration (line, version, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			m.Line, m.Version, m.Name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, m.Up); err != nil {
			return err
		}
		applied = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("error applying migration %s %03d_%s: %w", m.Line, m.Version, m.Name, err)
	}
	return applied, nil
}

// Validate reports ErrMissingVersion when the database lacks a version of pgsaga's line, of
// opts.Lines, or of River's migrations.
func Validate(ctx context.Context, pool *pgxpool.Pool, opts *MigrateOpts) error {
	if opts == nil {
		opts = &MigrateOpts{}
	}
	if !opts.SkipRiver {
		migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
		if err != nil {
			return fmt.Errorf("error preparing River's migrations: %w", err)
		}
		res, err := migrator.Validate(ctx, nil)
		if err != nil {
			return fmt.Errorf("error validating River's migrations: %w", err)
		}
		if !res.OK {
			return fmt.Errorf("%w (River: %v)", ErrMissingVersion, res.Messages)
		}
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('pgsaga_migration') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("error validating migrations: %w", err)
	}
	if !exists {
		return fmt.Errorf("%w (no pgsaga_migration table)", ErrMissingVersion)
	}
	for _, line := range linesOf(opts) {
		migrations, err := load(line)
		if err != nil {
			return err
		}
		var latest int
		if err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM pgsaga_migration WHERE line = $1`, line.Name).Scan(&latest); err != nil {
			return fmt.Errorf("error validating migrations: %w", err)
		}
		if want := len(migrations); latest < want {
			return fmt.Errorf("%w (line %s at version %d, binary has %d)", ErrMissingVersion, line.Name, latest, want)
		}
	}
	return nil
}
