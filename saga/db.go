package saga

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
)

// DB is what a Client calls on the database holding pgsaga's tables: *pgxpool.Pool implements
// it. Each atomic phase also needs a connection of its own for the length of its transaction,
// so that its BEGIN travels with its first statement and its COMMIT with the key's write: a
// pool lends one with Acquire; any other DB must implement ConnDB, or NewClient refuses it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ConnDB is a DB other than a pool that lends connections of its own: a wrapper over one
// *pgx.Conn, say. AcquireConn returns an idle connection that nothing else uses until release
// is called.
type ConnDB interface {
	AcquireConn(ctx context.Context) (conn *pgx.Conn, release func(), err error)
}

// poolDB is how *pgxpool.Pool lends a connection.
type poolDB interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// lendsConns reports whether db can lend a phase its own connection.
func lendsConns(db DB) bool {
	switch db.(type) {
	case poolDB, ConnDB:
		return true
	}
	return false
}

// beginOn opens a transaction on a connection of db's own (a pool's, or a ConnDB's); nothing is
// sent yet.
func beginOn(ctx context.Context, db DB, opts *pgpipe.BeginOpts) (*pgpipe.Tx, error) {
	if pool, ok := db.(poolDB); ok {
		return pgpipe.Begin(ctx, pool, opts)
	}
	conn, release, err := db.(ConnDB).AcquireConn(ctx)
	if err != nil {
		return nil, err
	}
	return pgpipe.BeginConn(conn, release, opts), nil
}
