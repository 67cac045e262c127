package pgpipe

import (
	"github.com/jackc/pgx/v5"
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
