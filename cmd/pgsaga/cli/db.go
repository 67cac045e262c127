package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/migrations"
)

// connectTimeout bounds the first connection, so a wrong URL fails fast.
const connectTimeout = 10 * time.Second

// defaultMaxConns is the pool size when the URL does not set pool_max_conns: enough for a
// service answering concurrent duplicates beside a worker.
const defaultMaxConns = 16

// Connect opens a pool on the database at url the way the commands do, for an application's
// own commands (App.Commands): pool_max_conns defaults to 16 when the URL does not set it, and
// the server must answer a ping within 10s. A malformed URL is bad usage (UsageErrorf), reported
// without the URL, so its password is never printed.
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) { return openPool(ctx, url) }

// openPool connects to url and checks that the server answers.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL, password included: say only what is wrong.
		return nil, usageErrorf("invalid database URL: %s", redactParseError(err))
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to the database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error connecting to the database at %s: %w", cfg.ConnConfig.Host, err)
	}
	return pool, nil
}

func redactParseError(err error) string {
	msg := err.Error()
	var unwrapped interface{ Unwrap() error }
	if errors.As(err, &unwrapped) && unwrapped.Unwrap() != nil {
		msg = unwrapped.Unwrap().Error()
	}
	return msg
}

// connect opens the database named by the flags.
func (c *cli) connect(ctx context.Context) (*pgxpool.Pool, error) {
	url, err := c.dbURL()
	if err != nil {
		return nil, err
	}
	return openPool(ctx, url)
}

// connectMigrated opens the database and checks that it carries every migration this binary
// has, so that a command on an old schema fails with "run migrate" instead of an SQL error.
func (c *cli) connectMigrated(ctx context.Context) (*pgxpool.Pool, error) {
	pool, err := c.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := migrations.Validate(ctx, pool, c.migrateOpts()); err != nil {
		pool.Close()
		return nil, fmt.Errorf("error checking the schema: %w", err)
	}
	return pool, nil
}

func (c *cli) migrateOpts() *migrations.MigrateOpts {
	return &migrations.MigrateOpts{Lines: c.app.Migrations}
}
