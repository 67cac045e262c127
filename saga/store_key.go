package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// Every statement on pgsaga_key and the call journal lives in the store_*.go files of this
// package and nowhere else: the reads of one key in store_head.go, the writes of an execution in
// store_write_sql.go (chosen and filled here), the takeovers, renewals and the resumer's claims
// in store_lease.go, the operators' reads and deletions in store_read.go and their actions in
// store_action.go. One statement per purpose (a claim, an advance, a completion, a release, a
// park), each writing only what its transition changes: the fewer parameters, the less the
// client encodes and the server checks.
//
// Leases are written with clock_timestamp() (the moment of the write), never now() (the
// transaction's start): a phase that waited on a lock must not commit a lease already nearly
// spent.
//
// Fencing: every write of an execution that holds a key names the key's lease token and
// status = 'started', and selects pgsaga_lease_lost() when it wrote no row (fenceSQL). When
// another execution took the key over, the write matches no row and raises SQLSTATE PGS01: the
// statement writes nothing (its journal rows are conditioned on the key's row), and inside a
// phase the COMMIT pipelined after it never runs. (`1 / count(*)`, division by zero, would do
// without a plpgsql function, but it is SQLSTATE class 22, the class of the client's data errors.)

// fenceSQL, selected over the rows a fenced write wrote (the CTE k), raises when there are none.
const fenceSQL = `CASE WHEN count(*) = 0 THEN pgsaga_lease_lost($3) END`

// holder is an execution's hold on a key: what its writes are fenced with.
type holder struct {
	scope Scope
	key   string
	token pgtype.UUID
	// attempt is the key's attempt this execution is (its journal rows carry it).
	attempt int
}

// writeKind is which transition a keyWrite makes, and so which statement writes it.
type writeKind int

const (
	// writeClaim stores a key no execution has stored yet, in the state the write describes.
	writeClaim writeKind = iota
	// writeAdvance moves a started key to a new recovery point and renews its lease.
	writeAdvance
	// writeComplete stores the response: started → completed.
	writeComplete
	// writeRelease gives the lease back after a transient failure and schedules the next attempt.
	writeRelease
	// writePark parks the key for an operator: started → failed.
	writePark
)

// keyWrite is a key's next state, with the call journal rows that ride in the same statement.
type keyWrite struct {
	kind writeKind
	// status is the stored status of a claim.
	status        KeyStatus
	recoveryPoint string
	state         map[string]json.RawMessage
	// lease renews a started key's lease from the moment of the write.
	lease     time.Duration
	response  *Response     // completions
	retention time.Duration // completions
	lastError string        // releases and parks
	reason    ParkedReason  // parks
	// retryIn schedules the next attempt (releases).
	retryIn time.Duration
	// unspent does not count this execution against the attempt budget (a pending call).
	unspent bool
	// done is the outcome of the call this execution just made.
	done *callDone
	// next journals the call this execution is about to make.
	next *callStart
	// orNothing makes a claim return no row, rather than raise a unique violation, when the key
	// exists: for claims that are not followed by a COMMIT of other writes.
	orNothing bool
	// alone is true when the write is its transaction's only statement (autocommitted: the phase
	// sent none): a fenced write that matches no row then commits nothing by itself, and needs
	// not raise.
	alone bool
	// traceContext is the claiming request's W3C traceparent, stored with the key ("" when the
	// request is not traced: NULL).
	traceContext string
}

// callDone is an external call's outcome, for its journal entry.
type callDone struct {
	step       string
	outcome    phases.CallOutcome
	providerID string
	// inRow is true when the call's journal entry is in the key row (the call the key's claim
	// journaled), not a pgsaga_call row of its own.
	inRow bool
}

// callStart is the journal row of a call about to be sent: its step (with the step's former
// names, under which earlier attempts may be journaled), its downstream reference and the
// provider's in-flight window journaled with it (the last this client saw for the step).
type callStart struct {
	step      string
	aliases   []string
	reference string
	window    time.Duration
}

// written is what a key write reports back.
type written struct {
	// createdAt is the key's creation time (claims only).
	createdAt time.Time
	// leaseLeft is the lease the write left, measured by the database after writing it.
	leaseLeft time.Duration
	// prior are the earlier attempts of the call w.next journaled, their times on the
	// database's clock, which read dbNow at the write.
	prior []runstate.CallRecord
	dbNow time.Time
}

// emptyObject is the encoding of no saved values, the common case of a first phase.
var emptyObject = []byte("{}")

func encodeState(state map[string]json.RawMessage) ([]byte, error) {
	if len(state) == 0 {
		return emptyObject, nil
	}
	b, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("error encoding saved state: %w", err)
	}
	return b, nil
}

// encodeResponse returns a response's stored columns.
func encodeResponse(r *Response) (status int32, header, body []byte, err error) {
	if h, ok := plainJSONHeader(r.Header); ok {
		body = r.Body
		if body == nil {
			body = []byte{}
		}
		return int32(r.Status), h, body, nil
	}
	if header, err = json.Marshal(r.Header); err != nil {
		return 0, nil, nil, fmt.Errorf("error encoding response headers: %w", err)
	}
	body = r.Body
	if body == nil {
		body = []byte{}
	}
	return int32(r.Status), header, body, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func millis(d time.Duration) int64 { return d.Milliseconds() }

// ceilMillis is d in whole milliseconds, rounded up: for windows that must not shrink.
func ceilMillis(d time.Duration) int64 { return (d + time.Millisecond - 1).Milliseconds() }

// keyStatement is one key write, ready to send: its SQL, its arguments and how to read its row.
type keyStatement struct {
	sql  string
	args []any
	// read reads the statement's result into out; nil for statements read with Exec.
	read func(row pgx.Row, out *written) error
	// exec is set for statements that return no row (claims of finished keys): rows tells
	// whether the statement wrote.
	exec bool
	// noRowIsFence is set for fenced writes that return no row, rather than raise, when the
	// lease was taken over (they go alone: see keyWrite.alone).
	noRowIsFence bool
}

// statement prepares w as h's write, its arguments in a; req and hash are those of a claim.
func (w *keyWrite) statement(h *holder, req *Request, hash []byte, a *args) (*keyStatement, error) {
	state, err := encodeState(w.state)
	if err != nil {
		return nil, err
	}
	s := a.reset()
	if w.kind == writeClaim {
		if err := w.claim(s, h, req, hash, state, a); err != nil {
			return nil, err
		}
		s.args = a.slice()
		return s, nil
	}
	fenced := fencedParams{tenant: h.scope.Tenant, actor: h.scope.Actor, key: h.key, token: &h.token,
		attempt: h.attempt, done: w.done}
	switch w.kind {
	case writeComplete:
		status, headers, body, err := encodeResponse(w.response)
		if err != nil {
			return nil, err
		}
		s.sql, s.read = inRow(w.done, completeSQL, completeCallInRowSQL), readFenced
		if w.alone && w.done != nil && w.done.inRow {
			s.sql, s.read, s.noRowIsFence = completeCallInRowAloneSQL, readAlone, true
		}
		p := completeParams{fencedParams: fenced, state: state, status: status, headers: headers, body: body,
			retentionMs: millis(w.retention)}
		p.add(a)
	case writeAdvance:
		s.sql, s.read = inRow(w.done, advanceSQL, advanceCallInRowSQL), readAdvanced
		p := advanceParams{fencedParams: fenced, recoveryPoint: w.recoveryPoint, state: state, leaseMs: millis(w.lease)}
		if n := w.next; n != nil {
			p.next, p.steps = n, append([]string{n.step}, n.aliases...)
		}
		p.add(a)
	case writeRelease:
		s.sql, s.read = inRow(w.done, releaseSQL, releaseCallInRowSQL), readFenced
		p := releaseParams{fencedParams: fenced, lastError: w.lastError, retryInMs: millis(max(w.retryIn, 0))}
		if w.unspent {
			p.unspent = 1
		}
		p.add(a)
	case writePark:
		s.sql, s.read = inRow(w.done, parkSQL, parkCallInRowSQL), readFenced
		p := parkParams{fencedParams: fenced, recoveryPoint: w.recoveryPoint, lastError: w.lastError, reason: w.reason}
		p.add(a)
	}
	s.args = a.slice()
	return s, nil
}

// inRow is the form of a fenced write that records done where its journal entry lives: inKeyRow
// when that is the key row, otherwise sql (which also serves a write after no call).
func inRow(done *callDone, sql, inKeyRow string) string {
	if done != nil && done.inRow {
		return inKeyRow
	}
	return sql
}

// claim prepares s as the claim of a key in the state w describes.
func (w *keyWrite) claim(s *keyStatement, h *holder, req *Request, hash []byte, state []byte, a *args) error {
	request := requestParams{tenant: req.Scope.Tenant, actor: req.Scope.Actor, key: req.Key,
		operation: req.Operation, method: req.Method, path: req.Path, hash: hash}
	switch w.status {
	case KeyStatusCompleted:
		status, headers, body, err := encodeResponse(w.response)
		if err != nil {
			return err
		}
		s.sql, s.exec = claimCompletedSQL, true
		if w.orNothing {
			s.sql = claimCompletedOrNothingSQL
		}
		p := claimCompletedParams{requestParams: request, state: state, status: status, headers: headers, body: body,
			retentionMs: millis(w.retention), token: &h.token, traceContext: w.traceContext}
		p.add(a)
	case KeyStatusFailed:
		if !w.orNothing {
			return errors.New("saga: a parked key is claimed only outside a phase")
		}
		s.sql, s.exec = claimParkedOrNothingSQL, true
		p := claimParkedParams{requestParams: request, recoveryPoint: w.recoveryPoint, state: state,
			lastError: w.lastError, reason: w.reason, token: &h.token, traceContext: w.traceContext}
		p.add(a)
	default:
		s.read = readClaimed
		switch {
		case w.next != nil && w.orNothing:
			s.sql = claimStartedJournalOrNothingSQL
		case w.next != nil:
			s.sql = claimStartedJournalSQL
		case w.orNothing:
			return errors.New("saga: a started key is claimed outside a phase only to journal a call")
		default:
			s.sql = claimStartedSQL
		}
		p := claimStartedParams{requestParams: request, body: req.Body, recoveryPoint: w.recoveryPoint, state: state,
			token: &h.token, leaseMs: millis(w.lease), traceContext: w.traceContext, next: w.next}
		p.add(a)
	}
	return nil
}

func readClaimed(row pgx.Row, out *written) error {
	var leftMs int64
	if err := row.Scan(nil, &out.createdAt, &leftMs); err != nil {
		return err
	}
	out.leaseLeft = time.Duration(leftMs) * time.Millisecond
	return nil
}

// readFenced reads the row of a fenced write that reports nothing: its fence, and a count.
func readFenced(row pgx.Row, _ *written) error {
	return row.Scan(nil, nil)
}

// readAlone reads the row of a fenced write that goes alone (noRowIsFence), which reports
// nothing.
func readAlone(row pgx.Row, _ *written) error {
	return row.Scan(nil)
}

func readAdvanced(row pgx.Row, out *written) error {
	var (
		leftMs pgtype.Int8
		prior  []byte
	)
	if err := row.Scan(nil, &leftMs, &prior, &out.dbNow); err != nil {
		return err
	}
	out.leaseLeft = time.Duration(leftMs.Int64) * time.Millisecond
	var err error
	out.prior, err = decodeCalls(prior, nil)
	return err
}

// writeKey runs a key write on its own, outside any phase: a release, a park, a completion after
// a call, the journal row of a call that no phase precedes, a claim of a key whose first step
// wrote nothing. A claim with orNothing reports false, writing nothing, when the key exists.
// A fenced write returns ErrLeaseLost, writing nothing, when another execution took the key
// over.
func writeKey(ctx context.Context, q queryer, h *holder, req *Request, hash []byte, w *keyWrite) (*written, bool, error) {
	a := getArgs()
	defer putArgs(a)
	s, err := w.statement(h, req, hash, a)
	if err != nil {
		return nil, false, err
	}
	out := &written{}
	if s.exec {
		tag, err := q.Exec(ctx, s.sql, s.args...)
		if err != nil {
			return nil, false, fmt.Errorf("error writing key: %w", asDuplicate(err))
		}
		return out, tag.RowsAffected() == 1, nil
	}
	err = s.read(q.QueryRow(ctx, s.sql, s.args...), out)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && w.orNothing:
		return nil, false, nil
	case w.kind != writeClaim && s.fence(err):
		return nil, false, ErrLeaseLost
	case err != nil:
		return nil, false, fmt.Errorf("error writing key: %w", asDuplicate(err))
	}
	return out, true, nil
}

// Errors raised by the engine's statements.
const (
	sqlstateUniqueViolation = "23505"
	// sqlstateFence is pgsaga_lease_lost()'s: a fenced write that matched no row.
	sqlstateFence = "PGS01"
	keyPrimaryKey = "pgsaga_key_pkey"
)

// fence reports whether err, the error of fenced write s, says the lease was taken over.
func (s *keyStatement) fence(err error) bool {
	return isFence(err) || (s.noRowIsFence && errors.Is(err, pgx.ErrNoRows))
}

// isFence reports whether err is the fence's: the lease was taken over.
func isFence(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlstateFence
}

// asDuplicate translates a claim's refusals: its unique violation into errDuplicate, the
// tombstone check's (retention.go) into errTombstoned.
func asDuplicate(err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation && pgErr.ConstraintName == keyPrimaryKey:
		return errDuplicate
	case isTombstoned(err):
		return errTombstoned
	}
	return err
}
