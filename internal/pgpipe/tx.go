package pgpipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Acquirer is what Begin needs: *pgxpool.Pool.
type Acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// BeginOpts are optional settings for Begin.
type BeginOpts struct {
	// TxOptions are the transaction's modes, sent with its BEGIN. Defaults to a plain BEGIN
	// (the server's default isolation level).
	TxOptions pgx.TxOptions
	// BeforeBegin, when set, runs once on the transaction's connection, outside the
	// transaction, right before the transaction's first round trip (its first statement with
	// BEGIN): a read that decides whether the transaction should run at all costs a round trip
	// only for a transaction that sends a statement. When it returns an error, nothing more is
	// sent: the call that was about to send returns that error, and so does every later call but
	// Rollback. Defaults to nothing.
	BeforeBegin func(ctx context.Context, conn *pgx.Conn) error
}

// Tx is a transaction whose BEGIN, savepoints and COMMIT are sent with the statements around
// them (see the package documentation). It implements pgx.Tx. Like pgx's, it is not safe for
// concurrent use, and its methods return an error matching pgx.ErrTxClosed once it has ended.
type Tx struct {
	// pooled is the pool's connection conn is, given back when the Tx ends; release gives back a
	// connection from elsewhere (BeginConn).
	pooled  *pgxpool.Conn
	release func()
	conn    *pgx.Conn
	opts    pgx.TxOptions
	// beforeBegin is BeginOpts.BeforeBegin until it has run; refused is its error.
	beforeBegin func(ctx context.Context, conn *pgx.Conn) error
	refused     error

	// begun is true once BEGIN ran on the server; inner is pgx's transaction it opened.
	begun bool
	inner pgx.Tx
	// pending are the savepoint statements waiting for the next round trip, in order. BEGIN is
	// not among them: it goes first while begun is false.
	pending []string
	// open are the rows or batch results of the last call, until they are closed.
	open       closer
	savepoints int64
	closed     bool
}

// closer is what a Tx closes before its next call: rows or batch results left open.
type closer interface{ closeForTx() }

var _ pgx.Tx = (*Tx)(nil)

// Begin acquires a connection from db for a new transaction and sends nothing: BEGIN goes with
// the transaction's first statement. The connection returns to db when the Tx ends.
func Begin(ctx context.Context, db Acquirer, opts *BeginOpts) (*Tx, error) {
	if opts == nil {
		opts = &BeginOpts{}
	}
	pooled, err := db.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("error acquiring a connection: %w", err)
	}
	return &Tx{pooled: pooled, conn: pooled.Conn(), opts: opts.TxOptions, beforeBegin: opts.BeforeBegin}, nil
}

// BeginConn starts a new transaction on conn, which release gives back when the Tx ends, and
// sends nothing: BEGIN goes with the transaction's first statement. conn must be idle and used
// by nothing else until then.
func BeginConn(conn *pgx.Conn, release func(), opts *BeginOpts) *Tx {
	if opts == nil {
		opts = &BeginOpts{}
	}
	return &Tx{release: release, conn: conn, opts: opts.TxOptions, beforeBegin: opts.BeforeBegin}
}

// Refused returns the error of BeginOpts.BeforeBegin, nil when it has not run or returned none.
func (tx *Tx) Refused() error { return tx.refused }

// starting runs BeginOpts.BeforeBegin, once, before the transaction's first round trip.
func (tx *Tx) starting(ctx context.Context) error {
	if hook := tx.beforeBegin; hook != nil && !tx.begun {
		tx.beforeBegin = nil
		tx.refused = hook(ctx, tx.conn)
	}
	return tx.refused
}

// Begun reports whether BEGIN has run on the server: false while the transaction has sent
// nothing (and, after CommitWith, when it committed as one implicit transaction).
func (tx *Tx) Begun() bool { return tx.begun }

// ready checks that tx is still open and closes what the last call left open.
func (tx *Tx) ready() error {
	if tx.closed {
		return pgx.ErrTxClosed
	}
	if tx.open != nil {
		open := tx.open
		tx.open = nil
		open.closeForTx()
	}
	return nil
}

// direct reports whether a statement can be sent on its own: nothing is waiting to go with it.
func (tx *Tx) direct() bool { return tx.begun && len(tx.pending) == 0 }

// head starts a batch with what must go before the next statement: BEGIN if it has not run,
// then the pending statements, which it consumes.
func (tx *Tx) head() (*pgx.Batch, head) {
	b := &pgx.Batch{}
	h := head{begin: !tx.begun, items: tx.pending}
	if h.begin {
		b.BeginTx(tx.opts)
	}
	for _, sql := range tx.pending {
		b.Queue(sql)
	}
	tx.pending = nil
	return b, h
}

// head is what a batch carries before the caller's statements.
type head struct {
	begin bool
	items []string
}

// readHead reads the results of a batch's head and records that BEGIN ran. It returns the first
// error.
func (tx *Tx) readHead(br pgx.BatchResults, h head) error {
	var first error
	if h.begin {
		if _, err := br.Exec(); err != nil {
			first = fmt.Errorf("error beginning transaction: %w", err)
		} else {
			tx.begun, tx.inner = true, br.Tx()
		}
	}
	for range h.items {
		if _, err := br.Exec(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// readOne reads the next result of br as qq's: through qq's callback when it has one.
func readOne(br pgx.BatchResults, qq *pgx.QueuedQuery) error {
	if qq.Fn != nil {
		return qq.Fn(br)
	}
	_, err := br.Exec()
	return err
}

// Exec runs sql; the first statement of the transaction carries BEGIN and the pending
// statements in the same round trip.
func (tx *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := tx.ready(); err != nil {
		return pgconn.CommandTag{}, err
	}
	if tx.direct() {
		return tx.conn.Exec(ctx, sql, args...)
	}
	if err := tx.starting(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	b, h := tx.head()
	b.Queue(sql, args...)
	br := tx.conn.SendBatch(ctx, b)
	err := tx.readHead(br, h)
	tag, execErr := br.Exec()
	if err == nil {
		err = execErr
	}
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	return tag, err
}

// Query runs sql; the first statement of the transaction carries BEGIN and the pending
// statements in the same round trip. Rows left open are closed by the next call on tx.
func (tx *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := tx.ready(); err != nil {
		return errRows(err), err
	}
	if tx.direct() {
		rows, err := tx.conn.Query(ctx, sql, args...)
		r := &txRows{Rows: rows, tx: tx}
		tx.open = r
		return r, err
	}
	if err := tx.starting(ctx); err != nil {
		return errRows(err), err
	}
	b, h := tx.head()
	b.Queue(sql, args...)
	br := tx.conn.SendBatch(ctx, b)
	if err := tx.readHead(br, h); err != nil {
		_ = br.Close()
		return errRows(err), err
	}
	rows, err := br.Query()
	r := &txRows{Rows: rows, tx: tx, br: br}
	tx.open = r
	return r, err
}

// QueryRow is Query for one row: Scan reads it and closes the rows.
func (tx *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := tx.Query(ctx, sql, args...)
	return txRow{rows: rows}
}

// SendBatch sends b; the transaction's first round trip carries BEGIN and the pending
// statements in front of b's. The results, like pgx's, must be closed (the next call on tx
// closes them if they are not).
func (tx *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := tx.ready(); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	if tx.direct() {
		r := &txBatch{BatchResults: tx.conn.SendBatch(ctx, b), tx: tx}
		tx.open = r
		return r
	}
	if err := tx.starting(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	full, h := tx.head()
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	br := tx.conn.SendBatch(ctx, full)
	if err := tx.readHead(br, h); err != nil {
		_ = br.Close()
		return pgx.FailedBatchResults(b, err)
	}
	r := &txBatch{BatchResults: br, tx: tx}
	tx.open = r
	return r
}

// flush sends BEGIN and the pending statements in a round trip of their own, for the calls
// that cannot carry them.
func (tx *Tx) flush(ctx context.Context) error {
	if err := tx.ready(); err != nil {
		return err
	}
	if tx.direct() {
		return nil
	}
	if err := tx.starting(ctx); err != nil {
		return err
	}
	b, h := tx.head()
	br := tx.conn.SendBatch(ctx, b)
	err := tx.readHead(br, h)
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	return err
}

// CopyFrom sends BEGIN and the pending statements first, in a round trip of their own.
func (tx *Tx) CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error) {
	if err := tx.flush(ctx); err != nil {
		return 0, err
	}
	return tx.conn.CopyFrom(ctx, tableName, columnNames, rowSrc)
}

// Prepare sends BEGIN and the pending statements first, in a round trip of their own.
func (tx *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := tx.flush(ctx); err != nil {
		return nil, err
	}
	return tx.conn.Prepare(ctx, name, sql)
}

// LargeObjects sends BEGIN and the pending statements first, in a round trip of their own (it
// has no context: they are sent without one). The large objects' calls bypass tx: close them
// before using tx again.
func (tx *Tx) LargeObjects() pgx.LargeObjects {
	if err := tx.flush(context.Background()); err != nil || tx.inner == nil {
		// A transaction pgx considers closed: every call answers ErrTxClosed.
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed).Tx().LargeObjects()
	}
	return tx.inner.LargeObjects()
}

// Conn returns the transaction's connection. Statements sent on it directly bypass tx's
// pipelining: close tx's open rows first.
func (tx *Tx) Conn() *pgx.Conn { return tx.conn }

// Begin starts a savepoint. Its SAVEPOINT statement, and its RELEASE or ROLLBACK TO, are sent
// with the next statement (or with COMMIT); their errors, if any, are that statement's.
func (tx *Tx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := tx.ready(); err != nil {
		return nil, err
	}
	tx.savepoints++
	sp := &savepoint{tx: tx, name: fmt.Sprintf("sp_%d", tx.savepoints)}
	tx.control("savepoint " + sp.name)
	return sp, nil
}

// control queues a savepoint statement.
func (tx *Tx) control(sql string) { tx.pending = append(tx.pending, sql) }

// Commit commits: COMMIT (with any pending statements) in one round trip, or nothing at all
// when the transaction never sent a statement. It is CommitWith(ctx, nil).
func (tx *Tx) Commit(ctx context.Context) error { return tx.CommitWith(ctx, nil) }

// CommitWith sends b's statements and COMMIT in one round trip and ends the transaction. When
// the transaction never sent a statement, b's statements are sent
// without BEGIN and COMMIT, as one implicit transaction: the same all-or-nothing, no more round
// trips than one. b may be nil.
//
// Callbacks set on b's queued queries read their results. A statement that raises keeps COMMIT
// from running: nothing commits, and the server's *pgconn.PgError is returned. An error from a
// callback itself (decoding a result) does not stop a COMMIT the server already ran: it is
// returned in a *CommittedError. When the connection breaks after the COMMIT was sent, whether
// it ran is unknown; the error is returned as is. The connection goes back to the pool in every
// case.
func (tx *Tx) CommitWith(ctx context.Context, b *pgx.Batch) error {
	if err := tx.ready(); err != nil {
		return err
	}
	defer tx.end(ctx)
	if tx.refused != nil {
		return tx.refused
	}
	full := &pgx.Batch{}
	if tx.begun {
		// Savepoints mean nothing in a transaction that never began: they are dropped.
		for _, sql := range tx.pending {
			full.Queue(sql)
		}
	}
	tx.pending = nil
	if b != nil {
		full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	}
	statements := full.Len()
	if tx.begun {
		full.Queue("commit")
	}
	switch {
	case full.Len() == 0:
		return nil
	case !tx.begun && statements == 1:
		return tx.commitOne(ctx, full.QueuedQueries[0])
	}
	br := tx.conn.SendBatch(ctx, full)
	var first error // the first error any result or callback reported
	for _, qq := range full.QueuedQueries[:statements] {
		if err := readOne(br, qq); err != nil && first == nil {
			first = err
		}
	}
	var tag pgconn.CommandTag
	var commitErr error
	if tx.begun {
		tag, commitErr = br.Exec()
	}
	// Close returns the batch's own error, as pgx recorded it: a server's error unwrapped even
	// when a callback reworded it. It tells a statement that failed (nothing committed) from a
	// callback that failed to read a result (the server went on to COMMIT).
	closeErr := br.Close()
	var pgErr *pgconn.PgError
	serverFailed := errors.As(closeErr, &pgErr) || errors.As(commitErr, &pgErr) || errors.As(first, &pgErr)
	switch {
	case tx.conn.IsClosed():
		// Whether a COMMIT that was sent ran is unknown: the lease and the fence decide later.
		return errors.Join(first, commitErr, closeErr)
	case serverFailed:
		return pgErr
	case tx.begun && tx.conn.PgConn().TxStatus() != 'I':
		return errors.Join(first, commitErr, closeErr, errors.New("transaction was not committed"))
	case first == nil && commitErr == nil && tx.begun && tag.String() != "COMMIT":
		return pgx.ErrTxCommitRollback
	case first != nil || commitErr != nil:
		return &CommittedError{Err: errors.Join(first, commitErr)}
	}
	return nil
}

// CommitRow is CommitWith for a batch of one statement (sql with args) whose row read reads,
// without making a batch when the transaction sent nothing: the statement then goes alone as a
// plain query, one implicit transaction. Its errors are CommitWith's.
func (tx *Tx) CommitRow(ctx context.Context, read func(pgx.Row) error, sql string, args ...any) error {
	if tx.begun || len(tx.pending) > 0 || tx.closed || tx.open != nil || tx.refused != nil {
		b := &pgx.Batch{}
		b.Queue(sql, args...).QueryRow(read)
		return tx.CommitWith(ctx, b)
	}
	defer tx.end(ctx)
	rows, sendErr := tx.conn.Query(ctx, sql, args...)
	err := read(txRow{rows: rows})
	rows.Close()
	return tx.committed(err, rows.Err(), sendErr)
}

// committed classifies how the lone statement of a transaction that sent nothing else ended:
// err is what reading its result returned, serverErr the statement's own error as pgx recorded
// it, sendErr pgx's when it sent it.
func (tx *Tx) committed(err, serverErr, sendErr error) error {
	if serverErr == nil {
		serverErr = sendErr
	}
	if err == nil && serverErr == nil && !tx.conn.IsClosed() {
		return nil
	}
	var pgErr *pgconn.PgError
	switch {
	case tx.conn.IsClosed():
		return errors.Join(err, serverErr)
	case errors.As(serverErr, &pgErr):
		return pgErr
	case sendErr != nil:
		return sendErr // pgx refused the statement before sending it
	case err != nil || serverErr != nil:
		// The rows came back and could not be read: the statement ran, and committed.
		return &CommittedError{Err: errors.Join(err, serverErr)}
	}
	return nil
}

// commitOne sends the one statement of a transaction that sent nothing else as a plain query:
// the same implicit transaction as a pipeline of one (it commits when it succeeds), without
// pgx's pipeline bookkeeping. Its server error, as pgx recorded it, says whether it ran.
func (tx *Tx) commitOne(ctx context.Context, qq *pgx.QueuedQuery) error {
	r := &oneResult{ctx: ctx, conn: tx.conn, qq: qq}
	err := readOne(r, qq)
	serverErr := r.close()
	return tx.committed(err, serverErr, r.sendErr)
}

// CommittedError is returned by CommitWith when the transaction committed but a callback failed
// to read a result.
type CommittedError struct{ Err error }

func (e *CommittedError) Error() string {
	return "transaction committed, but reading a result failed: " + e.Err.Error()
}

func (e *CommittedError) Unwrap() error { return e.Err }

// Rollback ends the transaction: ROLLBACK when BEGIN ran, nothing at all otherwise (pending
// statements are dropped). It returns an error matching pgx.ErrTxClosed when the transaction
// has already ended, so it can be deferred.
func (tx *Tx) Rollback(ctx context.Context) error {
	if err := tx.ready(); err != nil {
		return err
	}
	tx.pending = nil
	var err error
	if tx.begun && !tx.conn.IsClosed() && tx.conn.PgConn().TxStatus() != 'I' {
		_, err = tx.conn.Exec(ctx, "rollback")
	}
	tx.end(ctx)
	return err
}

// RollbackConfirmed is Rollback followed, on the same connection and in the same round trip, by
// a transaction that writes one WAL record and nothing else (a transactional logical decoding
// message, which any role may emit at any wal_level) when the server has synchronous standbys
// (synchronous_standby_names is set): its COMMIT is acknowledged only as a writing
// transaction's is, after a synchronous standby confirmed it. (A transaction that only takes a
// transaction id would not do: PostgreSQL waits for the standby only when the transaction wrote
// WAL.) What the rolled-back transaction read is then known to have come from a server that was
// still the primary: an old primary cut off from its standby never acknowledges that COMMIT.
// Without synchronous standbys there is nothing to confirm, and nothing is written. A
// transaction that sent nothing read nothing: it is ended as Rollback ends it.
func (tx *Tx) RollbackConfirmed(ctx context.Context) error {
	if err := tx.ready(); err != nil {
		return err
	}
	if !tx.begun {
		return tx.Rollback(ctx)
	}
	tx.pending = nil
	var err error
	if tx.conn.IsClosed() {
		err = errors.New("the connection closed before the transaction was confirmed")
	} else {
		// One simple-protocol query: ROLLBACK ends the transaction block, and the SELECT runs
		// in an implicit transaction of its own, committed at the end of the query. The message
		// is empty: logical decoding, if anyone runs it, sees a message prefixed "pgsaga".
		_, err = tx.conn.Exec(ctx, "rollback; select pg_logical_emit_message(true, 'pgsaga', '') "+
			"where current_setting('synchronous_standby_names') <> ''")
	}
	tx.end(ctx)
	return err
}

// end releases the connection, idle: a transaction still open on it (a failed CommitWith) is
// rolled back first, and a connection that cannot be cleaned is closed.
func (tx *Tx) end(ctx context.Context) {
	if tx.closed {
		return
	}
	tx.closed = true
	switch {
	case tx.conn.IsClosed():
	case tx.conn.PgConn().TxStatus() != 'I':
		if _, err := tx.conn.Exec(context.WithoutCancel(ctx), "rollback"); err != nil {
			_ = tx.conn.Close(context.WithoutCancel(ctx))
		}
	case tx.conn.PgConn().Conn().SetDeadline(time.Time{}) != nil:
		// The socket was closed under pgx, outside it, while nothing was sent, so pgx has not
		// noticed: a deadline cannot be set on a closed socket (no system call, no round
		// trip). Close the connection so that the pool does not hand it out again.
		_ = tx.conn.Close(context.WithoutCancel(ctx))
	}
	if tx.pooled != nil {
		tx.pooled.Release()
	} else {
		tx.release()
	}
}
