package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// phaseTx is one atomic phase's transaction on a pooled connection, with two round trips saved:
// its BEGIN can travel with the read of the key (the first phase of a new request), and its
// COMMIT always travels with the key's write. A phase therefore costs its own statements plus
// BEGIN and the write-and-commit pair, the same number of round trips as the business
// transaction alone.
type phaseTx struct {
	conn *pgxpool.Conn
	tx   pgx.Tx
	done bool
}

// beginPhase acquires a connection and begins a transaction. With lookup set, the key's row is
// read in the same round trip; it is nil when there is no such key.
func beginPhase(ctx context.Context, db DB, lookup *Request) (*phaseTx, *Key, error) {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("error acquiring a connection: %w", err)
	}
	if lookup == nil {
		tx, err := conn.Begin(ctx)
		if err != nil {
			conn.Release()
			return nil, nil, fmt.Errorf("error beginning a phase: %w", err)
		}
		return &phaseTx{conn: conn, tx: tx}, nil, nil
	}
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(lookupKeySQL, lookup.Scope.Tenant, lookup.Scope.Actor, lookup.Key)
	br := conn.SendBatch(ctx, b)
	p := &phaseTx{conn: conn, tx: br.Tx()}
	_, err = br.Exec()
	var k *Key
	if err == nil {
		k, err = scanKey(br.QueryRow())
		if errors.Is(err, ErrKeyNotFound) {
			k, err = nil, nil
		}
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		p.rollback(ctx)
		return nil, nil, fmt.Errorf("error beginning a phase: %w", err)
	}
	return p, k, nil
}

// claimAndCommit inserts the key (the request's first phase) and commits, in one round trip. It
// returns errDuplicate when the key exists: the phase then committed nothing.
func (p *phaseTx) claimAndCommit(ctx context.Context, req *Request, hash []byte, token uuid.UUID, w *keyWrite) (*written, error) {
	args, err := claimArgs(req, hash, token, w)
	if err != nil {
		return nil, err
	}
	var (
		out    written
		leftMs int64
	)
	if err := p.writeAndCommit(ctx, claimSQL, args, &out.createdAt, &leftMs); err != nil {
		return nil, asDuplicate(err)
	}
	out.leaseLeft = time.Duration(leftMs) * time.Millisecond
	return &out, nil
}

// fenceAndCommit advances a key the execution holds and commits, in one round trip. It returns
// ErrLeaseLost when another execution took the lease over: the phase then committed nothing.
func (p *phaseTx) fenceAndCommit(ctx context.Context, scope Scope, key string, token uuid.UUID, w *keyWrite) (*written, error) {
	args, err := fencedWriteArgs(scope, key, token, w)
	if err != nil {
		return nil, err
	}
	var out *written
	err = p.writeAndCommit(ctx, fencedWriteSQL, args, func(row pgx.Row) error {
		var scanErr error
		out, scanErr = scanWritten(row)
		return scanErr
	})
	return out, asLeaseLost(err)
}

// writeAndCommit sends the key's write and COMMIT as one batch, and reads the write's row into
// dest (values to scan into, or a single func(pgx.Row) error). PostgreSQL skips the rest of a
// pipeline after an error, so a write that raises leaves the COMMIT unexecuted and the
// transaction to roll back.
func (p *phaseTx) writeAndCommit(ctx context.Context, sql string, args []any, dest ...any) error {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue("COMMIT")
	br := p.conn.SendBatch(ctx, b)
	var err error
	if scan, ok := dest[0].(func(pgx.Row) error); ok && len(dest) == 1 {
		err = scan(br.QueryRow())
	} else {
		err = br.QueryRow().Scan(dest...)
	}
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("transaction was not committed (%s)", tag.String())
	}
	if err != nil {
		p.rollback(ctx)
		return err
	}
	p.done = true
	p.conn.Release()
	return nil
}

// rollback ends the transaction (if still open) and returns the connection to the pool.
func (p *phaseTx) rollback(ctx context.Context) {
	if p.done {
		return
	}
	p.done = true
	if p.conn.Conn().PgConn().TxStatus() != 'I' {
		_ = p.tx.Rollback(context.WithoutCancel(ctx))
	}
	p.conn.Release()
}
