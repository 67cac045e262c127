package pgpipe

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// savepoint is a nested transaction of a Tx. Its statements go through the Tx, so they
// pipeline the same way; its SAVEPOINT, RELEASE and ROLLBACK TO wait for the Tx's next round
// trip.
type savepoint struct {
	tx     *Tx
	name   string
	closed bool
}

var _ pgx.Tx = (*savepoint)(nil)

func (sp *savepoint) Begin(ctx context.Context) (pgx.Tx, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Begin(ctx)
}

// Commit releases the savepoint (with the Tx's next round trip).
func (sp *savepoint) Commit(context.Context) error { return sp.end("release savepoint ") }

// Rollback rolls back to the savepoint (with the Tx's next round trip), so it can be deferred.
func (sp *savepoint) Rollback(context.Context) error { return sp.end("rollback to savepoint ") }

func (sp *savepoint) end(verb string) error {
	if sp.closed {
		return pgx.ErrTxClosed
	}
	if err := sp.tx.ready(); err != nil {
		return err
	}
	sp.closed = true
	sp.tx.control(verb + sp.name)
	return nil
}

func (sp *savepoint) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	if sp.closed {
		return 0, pgx.ErrTxClosed
	}
	return sp.tx.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

func (sp *savepoint) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if sp.closed {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	return sp.tx.SendBatch(ctx, b)
}

func (sp *savepoint) LargeObjects() pgx.LargeObjects { return sp.tx.LargeObjects() }

func (sp *savepoint) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if sp.closed {
		return nil, pgx.ErrTxClosed
	}
	return sp.tx.Prepare(ctx, name, sql)
}

func (sp *savepoint) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if sp.closed {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return sp.tx.Exec(ctx, sql, args...)
}

func (sp *savepoint) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if sp.closed {
		return errRows(pgx.ErrTxClosed), pgx.ErrTxClosed
	}
	return sp.tx.Query(ctx, sql, args...)
}

func (sp *savepoint) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := sp.Query(ctx, sql, args...)
	return txRow{rows: rows}
}

func (sp *savepoint) Conn() *pgx.Conn { return sp.tx.Conn() }
