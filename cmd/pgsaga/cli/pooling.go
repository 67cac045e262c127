package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/saga"
)

// Environment variables the pooling flags default to.
const (
	envDatabasePooling   = "PGSAGA_DATABASE_POOLING"
	envListenDatabaseURL = "PGSAGA_LISTEN_DATABASE_URL"
)

// --database-pooling values: how --database-url reaches PostgreSQL.
const (
	// poolingSession: each connection is a session of its own (a direct connection, or a
	// pooler in session mode).
	poolingSession = "session"
	// poolingTransaction: a pooler in transaction pooling mode (PgBouncer's
	// pool_mode=transaction): each transaction may run in another server session.
	poolingTransaction = "transaction"
)

// execModeParam is pgx's connection-string parameter for the query exec mode, and
// transactionExecMode the only mode that works through a transaction pooler without
// protocol-level prepared statements (PgBouncer before 1.21): it describes each statement once
// with the unnamed statement and sends every execution self-contained, so no statement depends
// on the server session of an earlier one.
const (
	execModeParam       = "default_query_exec_mode"
	transactionExecMode = "cache_describe"
)

// databasePooling is --database-pooling, else $PGSAGA_DATABASE_POOLING, else session.
func (c *cli) databasePooling() (string, error) {
	v := strings.TrimSpace(c.pooling)
	if v == "" {
		v = strings.TrimSpace(c.env.Getenv(envDatabasePooling))
	}
	switch v {
	case "", poolingSession:
		return poolingSession, nil
	case poolingTransaction:
		return poolingTransaction, nil
	}
	return "", usageErrorf("invalid --database-pooling %q: want session or transaction", v)
}

// transactionPooled reports whether --database-pooling is transaction (false on a bad value,
// which dbURL has refused already).
func (c *cli) transactionPooled() bool {
	p, err := c.databasePooling()
	return err == nil && p == poolingTransaction
}

// withPooling returns url as the pool must open it for pooling: behind a transaction pooler,
// in pgx's cache_describe mode, added to url when url names no mode. A url that names another
// mode is refused: its statements would meet other clients' on shared server sessions.
func withPooling(url, pooling string) (string, error) {
	if pooling != poolingTransaction {
		return url, nil
	}
	if !strings.Contains(url, execModeParam) {
		url = withParam(url, execModeParam, transactionExecMode)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url, nil // openPool reports a malformed URL, without printing it
	}
	if mode := cfg.DefaultQueryExecMode; mode != pgx.QueryExecModeCacheDescribe {
		return "", usageErrorf("--database-pooling=transaction needs pgx's %s=%s, and --database-url asks for %s",
			execModeParam, transactionExecMode, strings.ReplaceAll(mode.String(), " ", "_"))
	}
	return url, nil
}

// withParam adds name=value to a connection string: a URL's query, or a keyword/value string.
func withParam(conn, name, value string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		sep := "?"
		if strings.Contains(conn, "?") {
			sep = "&"
		}
		return conn + sep + name + "=" + value
	}
	return conn + " " + name + "=" + value
}

// listenURL is serve's --listen-database-url, else $PGSAGA_LISTEN_DATABASE_URL; "" for none.
func (c *cli) listenURL(flag string) string {
	if u := strings.TrimSpace(flag); u != "" {
		c.warnPassword("--listen-database-url", u)
		return u
	}
	return strings.TrimSpace(c.env.Getenv(envListenDatabaseURL))
}

// checkListen checks, at serve's start, that the bounded wait for a request in flight hears
// the notifications it listens for, and says which flag to change when it does not.
func checkListen(ctx context.Context, client *saga.Client, listenFlag bool) error {
	err := client.CheckListen(ctx)
	if !errors.Is(err, saga.ErrListenUnheard) {
		return err
	}
	if listenFlag {
		return fmt.Errorf("%w: --listen-database-url must reach the same database directly (or through session pooling), "+
			"not through a pooler in transaction pooling mode", saga.ErrListenUnheard)
	}
	return fmt.Errorf("%w: --database-url reaches no session of its own (a pooler in transaction pooling mode?): "+
		"declare it with --database-pooling=transaction, and give --listen-database-url a direct connection "+
		"or none (duplicates then poll)", saga.ErrListenUnheard)
}

// checkBuiltPooling refuses a service whose saga client does not run as the flags say: an
// application's Build must pass BuildParams.TransactionPooling and BuildParams.ListenPool on to
// saga.Config.
func checkBuiltPooling(svc *Service, p *BuildParams) error {
	cfg := svc.Client.Config()
	switch {
	case cfg.TransactionPooling != p.TransactionPooling:
		return fmt.Errorf("the application's Build made its saga client with TransactionPooling %t, and --database-pooling is %s: "+
			"pass BuildParams.TransactionPooling to saga.Config", cfg.TransactionPooling, poolingName(p.TransactionPooling))
	case p.ListenPool != nil && cfg.ListenDB != p.ListenPool:
		return errors.New("the application's Build made its saga client without the pool of --listen-database-url: " +
			"pass BuildParams.ListenPool to saga.Config.ListenDB")
	}
	return nil
}

func poolingName(transaction bool) string {
	if transaction {
		return poolingTransaction
	}
	return poolingSession
}

// openListenPool opens the pool of --listen-database-url, or returns nil for none. A pooler
// in transaction pooling mode there is refused later, by checkListen.
func (c *cli) openListenPool(ctx context.Context, flag string) (*pgxpool.Pool, error) {
	url := c.listenURL(flag)
	if url == "" {
		return nil, nil
	}
	pool, err := openPool(ctx, url, nil, false) // checkListen judges it, by listening
	if err != nil {
		return nil, fmt.Errorf("--listen-database-url: %w", err)
	}
	return pool, nil
}

// Database is how an application's own command (App.Commands) reaches the database, as the
// built-in commands do: cmd's --database-url (else the file of --database-url-file, else
// $DATABASE_URL; empty when none is set), ready to open with Connect, and whether --database-pooling (else $PGSAGA_DATABASE_POOLING)
// says it goes through a transaction pooler. With a pooler the URL is in pgx's cache_describe
// mode, and the command's saga client must set saga.Config.TransactionPooling. A bad pooling
// value, or a URL asking for another exec mode behind a pooler, is bad usage.
func Database(cmd *cobra.Command, env *Env) (url string, transactionPooling bool, err error) {
	env = env.withDefaults()
	c := &cli{env: env}
	c.databaseURL, _ = cmd.Flags().GetString("database-url")
	c.databaseURLFile, _ = cmd.Flags().GetString("database-url-file")
	c.pooling, _ = cmd.Flags().GetString("database-pooling")
	if strings.TrimSpace(c.databaseURL) == "" && strings.TrimSpace(c.databaseURLFile) == "" &&
		strings.TrimSpace(env.Getenv(envDatabaseURL)) == "" {
		_, err = c.databasePooling()
		return "", false, err
	}
	if url, err = c.dbURL(); err != nil {
		return "", false, err
	}
	return url, c.transactionPooled(), nil
}
