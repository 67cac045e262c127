package pgpipe

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// txRows are rows of a Tx's query. When they came in a batch (the transaction's first round
// trip), closing them closes the batch too. Either way the Tx forgets them once closed.
type txRows struct {
	pgx.Rows
	tx     *Tx
	br     pgx.BatchResults // nil for a query sent on its own
	err    error            // from closing br
	closed bool
}

func (r *txRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *txRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	if r.br != nil {
		if err := r.br.Close(); err != nil && r.Rows.Err() == nil {
			r.err = err
		}
	}
	if r.tx.open == r {
		r.tx.open = nil
	}
}

func (r *txRows) closeForTx() { r.Close() }

func (r *txRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// txRow is QueryRow's row: pgx's connRow.Scan on txRows.
type txRow struct{ rows pgx.Rows }

func (r txRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if err := r.rows.Err(); err != nil {
		return err
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// errRows are closed rows that report err: a query that could not be sent.
func errRows(err error) pgx.Rows {
	rows, _ := pgx.FailedBatchResults(&pgx.Batch{}, err).Query()
	return rows
}

// txBatch are a Tx's batch results: the Tx forgets them once closed. They are not a
// transaction's begin batch: Tx returns nil.
type txBatch struct {
	pgx.BatchResults
	tx *Tx
}

func (b *txBatch) Close() error {
	err := b.BatchResults.Close()
	if b.tx.open == b {
		b.tx.open = nil
	}
	return err
}

func (b *txBatch) closeForTx() { _ = b.Close() }

func (b *txBatch) Tx() pgx.Tx { return nil }

// oneResult are the results of a single statement sent as a plain query, for a callback written
// for batch results (pgx.QueuedQuery's Fn): it sends the statement when the callback reads it.
// close returns the statement's own error as pgx recorded it, whatever the callback made of it.
type oneResult struct {
	ctx  context.Context
	conn *pgx.Conn
	qq   *pgx.QueuedQuery
	sent bool
	rows pgx.Rows
	err  error
	// sendErr is the error pgx returned when sending the statement: one it refused before
	// sending, or the server's.
	sendErr error
}

var _ pgx.BatchResults = (*oneResult)(nil)

func (r *oneResult) send() bool {
	if r.sent {
		r.err = errors.New("no more results in batch")
		return false
	}
	r.sent = true
	return true
}

func (r *oneResult) Exec() (pgconn.CommandTag, error) {
	if !r.send() {
		return pgconn.CommandTag{}, r.err
	}
	var tag pgconn.CommandTag
	tag, r.err = r.conn.Exec(r.ctx, r.qq.SQL, r.qq.Arguments...)
	r.sendErr = r.err
	return tag, r.err
}

func (r *oneResult) Query() (pgx.Rows, error) {
	if !r.send() {
		return errRows(r.err), r.err
	}
	rows, err := r.conn.Query(r.ctx, r.qq.SQL, r.qq.Arguments...)
	r.rows, r.sendErr = rows, err
	return rows, err
}

func (r *oneResult) QueryRow() pgx.Row {
	rows, _ := r.Query()
	return txRow{rows: rows}
}

func (r *oneResult) Close() error { return r.close() }

func (r *oneResult) Tx() pgx.Tx { return nil }

// close closes the rows, if any, and returns the statement's error.
func (r *oneResult) close() error {
	if r.rows != nil {
		r.rows.Close()
		if r.err == nil {
			r.err = r.rows.Err()
		}
	}
	if !r.sent && r.err == nil {
		// The callback read nothing: send the statement anyway, as a pipeline would.
		_, r.err = r.Exec()
	}
	return r.err
}
