package cli

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errTransactionPooler is the one line a command stops with when --database-url goes through
// a pooler in transaction pooling mode that the flags do not declare.
var errTransactionPooler = errors.New("--database-url reaches PostgreSQL through a pooler in transaction pooling mode " +
	"(such as PgBouncer's pool_mode=transaction): declare it with --database-pooling=transaction")

// poolerProbeTimeout bounds each wait of the probe: a wait that does not end means the pooler
// has no server connection to spare, which says what it is.
const poolerProbeTimeout = 2 * time.Second

// refuseTransactionPooler refuses a pool that reaches PostgreSQL through a pooler in
// transaction pooling mode while its statements need a session of their own (pgx's default
// mode prepares named statements, which collide there: prepared statement "stmtcache_…"
// already exists). A pool in cache_describe mode (--database-pooling=transaction, or a URL that
// chose it) is fit for such a pooler and is not probed. Every statement of the probe is sent
// with the simple protocol, so it prepares nothing, before any other statement of the command.
//
// Directly connected, the process id a connection learns at its start is its server's
// (pg_backend_pid()); a pooler answers the start itself, with an id of its own. Behind a pooler
// the probe tells the modes apart by what they do with a server connection: in session mode a
// client keeps its own, in transaction mode it gives it back after each transaction, and the
// next client to begin one takes the connection given back last. So a second client holding a
// transaction open takes the first client's server connection, and the first client's next
// statement runs on another one. A probe that cannot tell (a pooler handing connections out in
// turn) lets the pool through.
//
// first is a connection of pool the caller holds (and releases).
func refuseTransactionPooler(ctx context.Context, pool *pgxpool.Pool, first *pgxpool.Conn) error {
	if pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheDescribe {
		return nil
	}
	pid, err := backendPID(ctx, first.Conn())
	if err != nil {
		return err
	}
	if pid == first.Conn().PgConn().PID() {
		return nil // a session of its own: no pooler in between
	}

	probeCtx, cancel := context.WithTimeout(ctx, poolerProbeTimeout)
	defer cancel()
	second, err := pool.Acquire(probeCtx)
	if err != nil {
		return nil // a pool of one connection: it cannot be told, nor can it collide with itself
	}
	defer second.Release()
	if _, err := second.Exec(probeCtx, "BEGIN", pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil // the pooler has no server connection for a second client: session pooling
	}
	defer func() { _, _ = second.Exec(context.WithoutCancel(ctx), "ROLLBACK", pgx.QueryExecModeSimpleProtocol) }()
	if _, err := backendPID(probeCtx, second.Conn()); err != nil {
		return nil
	}
	again, err := backendPID(probeCtx, first.Conn())
	switch {
	case err != nil && probeCtx.Err() != nil:
		return errTransactionPooler // waiting for the server connection the second client holds
	case err != nil:
		return err
	case again != pid:
		return errTransactionPooler
	}
	return nil
}

// sessionStateLost reports whether err is what a statement needing a session of its own meets
// behind a transaction pooler the probe could not tell (one that handed the server connections
// out in another order): a named prepared statement made in another server session (42P05), or
// missing from this one (26000). Either is the pooler, whatever the command was doing.
func sessionStateLost(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42P05" || pgErr.Code == "26000")
}

// backendPID is the process id of the server session conn's next statement runs in.
func backendPID(ctx context.Context, conn *pgx.Conn) (uint32, error) {
	var pid uint32
	err := conn.QueryRow(ctx, "SELECT pg_backend_pid()", pgx.QueryExecModeSimpleProtocol).Scan(&pid)
	return pid, err
}
