package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/pgavail"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

// connectTimeout bounds one attempt to reach the database (connect, ping, schema check), so a
// wrong URL fails fast.
const connectTimeout = 10 * time.Second

// defaultMaxConns is the pool size when the URL does not set pool_max_conns: enough for a
// service answering concurrent duplicates beside a worker.
const defaultMaxConns = 16

// defaultHostConnectTimeout bounds one connection attempt to one host when the URL sets no
// connect_timeout. A host that is frozen or cut off by a partition may accept the TCP connection
// (its kernel does) and never answer; without a bound pgx would wait on it for as long as the
// caller's context allows, and never try the next host of a multi-host URL.
const defaultHostConnectTimeout = 5 * time.Second

// defaultPingTimeout bounds the liveness check pgxpool makes of a connection that sat idle for
// more than a second before handing it out, when the URL sets no pool_ping_timeout. A connection
// to a frozen primary would otherwise hold its request until the request's own deadline (a
// lease) instead of being replaced by one to the new primary.
const defaultPingTimeout = 2 * time.Second

// Connect opens a pool on the database at url the way the commands do, for an application's
// own commands (App.Commands): pool_max_conns defaults to 16, connect_timeout (per host) to 5s
// and pool_ping_timeout to 2s when the URL does not set them, a connection whose server says it
// is read-only (a standby, or default_transaction_read_only on) is dropped when released, no
// connection sends a cancel request (saga.WithoutCancelRequests), and the server must answer a
// ping within 10s. url may name several hosts with target_session_attrs=read-write (a
// replicated pair under a failover manager): connections go to whichever is the primary. A malformed URL is bad usage (UsageErrorf), reported without the
// URL, so its password is never printed.
//
// Before any other statement it checks that a URL in a mode that needs sessions of its own (any
// but pgx's cache_describe) does not reach a pooler in transaction pooling mode, and refuses
// one that does with an error naming --database-pooling (see refuseTransactionPooler).
func Connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return openPool(ctx, url, nil, true)
}

// openPool connects to url and checks that the server answers, and with checkPooler that it is
// not reached through an undeclared transaction pooler.
func openPool(ctx context.Context, url string, tracer pgx.QueryTracer, checkPooler bool) (*pgxpool.Pool, error) {
	pool, err := newPool(ctx, url, tracer)
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := ping(pingCtx, pool, checkPooler); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// newPool makes a pool on url without connecting: pgxpool connects on first use. tracer, when
// not nil, traces its statements.
func newPool(ctx context.Context, url string, tracer pgx.QueryTracer) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors can quote the URL, password included: say only what is wrong.
		return nil, usageErrorf("invalid database URL: %s", redactParseError(err))
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	if !strings.Contains(url, "connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = defaultHostConnectTimeout
	}
	if !strings.Contains(url, "pool_ping_timeout") {
		cfg.PingTimeout = defaultPingTimeout
	}
	cfg.AfterRelease = writable
	saga.WithoutCancelRequests(cfg)
	if tracer != nil {
		cfg.ConnConfig.Tracer = tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to the database: %w", err)
	}
	return pool, nil
}

// writable is the pool's AfterRelease hook: it keeps a released connection only while its
// server has not said it is read-only. PostgreSQL (14 and later) reports in_hot_standby and
// default_transaction_read_only to the client whenever they change, so this costs no round
// trip. A connection made with target_session_attrs=read-write was to a primary; a server that
// later refuses writes on it (a demoted node that kept its sessions, an operator fencing the old
// primary with default_transaction_read_only) would answer every write with SQLSTATE 25006 for
// as long as the pool kept it. Dropped, it is replaced by a connection to the primary.
func writable(conn *pgx.Conn) bool {
	pg := conn.PgConn()
	return pg.ParameterStatus("in_hot_standby") != "on" && pg.ParameterStatus("default_transaction_read_only") != "on"
}

// ping checks that the server answers, naming its host when it does not, and with checkPooler
// that the connection does not go through an undeclared transaction pooler
// (refuseTransactionPooler), on the same connection: a second one would cost a second connect.
func ping(ctx context.Context, pool *pgxpool.Pool, checkPooler bool) error {
	conn, err := pool.Acquire(ctx)
	if err == nil {
		err = conn.Ping(ctx)
	}
	if err != nil {
		if conn != nil {
			conn.Release()
		}
		return fmt.Errorf("error connecting to the database at %s: %w", pool.Config().ConnConfig.Host, err)
	}
	defer conn.Release()
	if !checkPooler {
		return nil
	}
	return refuseTransactionPooler(ctx, pool, conn)
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
	return openPool(ctx, url, c.tracing.pgxTracer(), true)
}

// connectMigrated opens the database and checks that it carries every migration this binary
// has, so that a command on an old schema fails with "run migrate" instead of an SQL error.
func (c *cli) connectMigrated(ctx context.Context) (*pgxpool.Pool, error) {
	return c.connectMigratedWaiting(ctx, 0, nil)
}

// withPool runs fn on a pool of the migrated database (connectMigrated), closed when fn returns:
// the database of a one-shot command.
func (c *cli) withPool(ctx context.Context, fn func(*pgxpool.Pool) error) error {
	pool, err := c.connectMigrated(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return fn(pool)
}

// connectMigratedWaiting is connectMigrated for the long-running commands: while the database
// cannot be reached (down, starting up, shutting down, out of connections) it tries again with
// backoff, logging each failed attempt on logger at info, for up to wait. A database that
// answers and refuses (a wrong password, a missing database, a missing migration) fails at
// once: waiting would not change it.
func (c *cli) connectMigratedWaiting(ctx context.Context, wait time.Duration, logger *slog.Logger) (*pgxpool.Pool, error) {
	url, err := c.dbURL()
	if err != nil {
		return nil, err
	}
	pool, err := newPool(ctx, url, c.tracing.pgxTracer())
	if err != nil {
		return nil, err
	}
	check := func(ctx context.Context) error {
		if err := ping(ctx, pool, true); err != nil {
			return err
		}
		if err := migrations.Validate(ctx, pool, c.migrateOpts()); err != nil {
			return fmt.Errorf("error checking the schema: %w", err)
		}
		return nil
	}
	if err := waitForDatabase(ctx, wait, logger, check); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// waitForDatabase runs check (each attempt bounded by connectTimeout) until it succeeds, fails
// with an error that waiting cannot fix, or wait has passed since the first attempt.
func waitForDatabase(ctx context.Context, wait time.Duration, logger *slog.Logger, check func(context.Context) error) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	deadline := time.Now().Add(wait)
	delays := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(200*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second),
		backoff.WithMaxElapsedTime(0),
	)
	for attempt := 1; ; attempt++ {
		attemptCtx, cancel := context.WithTimeout(ctx, connectTimeout)
		err := check(attemptCtx)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted while waiting for the database: %w", err)
		case !databaseUnavailable(err):
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			if wait > 0 {
				return fmt.Errorf("%w (still unavailable after waiting %s: see --db-wait)", err, wait)
			}
			return err
		}
		delay := min(delays.NextBackOff(), left)
		logger.Info("database unavailable, retrying", "attempt", attempt, "retry_in", delay.Round(time.Millisecond), "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for the database: %w", err)
		case <-time.After(delay):
		}
	}
}

// databaseUnavailable reports whether err means the database could not be reached now, as
// opposed to a database that answered and refused (pgavail.Unavailable); a missing migration
// is a refusal.
func databaseUnavailable(err error) bool {
	return !errors.Is(err, migrations.ErrMissingVersion) && pgavail.Unavailable(err)
}

func (c *cli) migrateOpts() *migrations.MigrateOpts {
	return &migrations.MigrateOpts{Lines: c.app.Migrations}
}
