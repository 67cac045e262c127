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

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// A key's writes, as saga knows them (keyWrite), bound to the key store's statements
// (internal/keystore, which owns every statement on the key tables and documents their fencing
// and clocks): the reads of one key are in store_head.go, the takeovers, renewals and the
// resumer's claims in store_lease.go, the operators' reads in store_read.go and their actions
// in store_action.go. One statement per transition (a claim, an advance, a completion, a
// release, a park), each writing only what its transition changes.

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

	// claimed and advanced are what a claim and an advance scan their rows into, in the
	// written itself, so that a write allocates only what it keeps.
	claimed  keystore.ClaimStartedRow
	advanced keystore.AdvanceRow
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

func millis(d time.Duration) int64 { return d.Milliseconds() }

// ceilMillis is d in whole milliseconds, rounded up: for windows that must not shrink.
func ceilMillis(d time.Duration) int64 { return (d + time.Millisecond - 1).Milliseconds() }

// keyStatement is one key write, ready to send: the store's statement with its arguments bound,
// and how to read its row.
type keyStatement struct {
	st *keystore.Statement
	// read reads the statement's result into out; nil for statements read with Exec.
	read func(st *keystore.Statement, row pgx.Row, out *written) error
	// exec is set for statements that return no row (claims of finished keys): rows tells
	// whether the statement wrote.
	exec bool
	// noRowIsFence is set for fenced writes that return no row, rather than raise, when the
	// lease was taken over (they go alone: see keyWrite.alone).
	noRowIsFence bool
}

// release gives the statement's arguments back, once its result has been read.
func (s *keyStatement) release() { s.st.Release() }

// statement binds w as h's write; req and hash are those of a claim.
func (w *keyWrite) statement(h *holder, req *Request, hash []byte) (keyStatement, error) {
	state, err := encodeState(w.state)
	if err != nil {
		return keyStatement{}, err
	}
	if w.kind == writeClaim {
		return w.claim(h, req, hash, state)
	}
	tenant, actor, key, token, attempt := h.scope.Tenant, h.scope.Actor, h.key, h.token, int32(h.attempt)
	var done struct{ step, outcome, providerID pgtype.Text }
	inRow := false
	if d := w.done; d != nil {
		done.step = pgtype.Text{String: d.step, Valid: true}
		done.outcome = pgtype.Text{String: string(d.outcome), Valid: true}
		done.providerID = textOrNull(d.providerID)
		inRow = d.inRow
	}
	switch w.kind {
	case writeComplete:
		status, headers, body, err := encodeResponse(w.response)
		if err != nil {
			return keyStatement{}, err
		}
		retention := millis(w.retention)
		switch {
		case inRow && w.alone:
			return keyStatement{st: keystore.BindCompleteCallInRowAlone(&keystore.CompleteCallInRowAloneParams{
				State: state, ResponseStatus: status, ResponseHeaders: headers, ResponseBody: body, RetentionMs: retention,
				Attempt: attempt, DoneStep: done.step, DoneOutcome: done.outcome, DoneProviderID: done.providerID,
				TenantID: tenant, ActorID: actor, Key: key, LeaseToken: token,
			}), read: readAlone, noRowIsFence: true}, nil
		case inRow:
			return keyStatement{st: keystore.BindCompleteCallInRow(&keystore.CompleteCallInRowParams{
				Key: key, TenantID: tenant, ActorID: actor, State: state, ResponseStatus: status, ResponseHeaders: headers,
				ResponseBody: body, RetentionMs: retention, Attempt: attempt, DoneStep: done.step,
				DoneOutcome: done.outcome, DoneProviderID: done.providerID, LeaseToken: token,
			}), read: readFenced}, nil
		}
		return keyStatement{st: keystore.BindComplete(&keystore.CompleteParams{
			Key: key, TenantID: tenant, ActorID: actor, State: state, ResponseStatus: status, ResponseHeaders: headers,
			ResponseBody: body, RetentionMs: retention, LeaseToken: token, DoneOutcome: done.outcome,
			DoneProviderID: done.providerID, DoneStep: done.step, Attempt: attempt,
		}), read: readFenced}, nil
	case writeAdvance:
		var next struct {
			step, reference pgtype.Text
			window          pgtype.Int8
			steps           []string
		}
		if n := w.next; n != nil {
			next.step = pgtype.Text{String: n.step, Valid: true}
			next.reference = textOrNull(n.reference)
			next.window = pgtype.Int8{Int64: ceilMillis(n.window), Valid: true}
			next.steps = append([]string{n.step}, n.aliases...)
		}
		if inRow {
			return keyStatement{st: keystore.BindAdvanceCallInRow(&keystore.AdvanceCallInRowParams{
				Key: key, NextStep: next.step, TenantID: tenant, ActorID: actor, NextSteps: next.steps, Attempt: attempt,
				RecoveryPoint: w.recoveryPoint, State: state, LeaseMs: millis(w.lease), DoneStep: done.step,
				DoneOutcome: done.outcome, DoneProviderID: done.providerID, LeaseToken: token,
				NextReference: next.reference, NextMaxInFlightMs: next.window,
			}), read: readAdvanced}, nil
		}
		return keyStatement{st: keystore.BindAdvance(&keystore.AdvanceParams{
			Key: key, NextStep: next.step, TenantID: tenant, ActorID: actor, NextSteps: next.steps, Attempt: attempt,
			RecoveryPoint: w.recoveryPoint, State: state, LeaseMs: millis(w.lease), LeaseToken: token,
			DoneOutcome: done.outcome, DoneProviderID: done.providerID, DoneStep: done.step,
			NextReference: next.reference, NextMaxInFlightMs: next.window,
		}), read: readAdvanced}, nil
	case writeRelease:
		retryIn, unspent := millis(max(w.retryIn, 0)), int32(0)
		if w.unspent {
			unspent = 1
		}
		if inRow {
			return keyStatement{st: keystore.BindReleaseCallInRow(&keystore.ReleaseCallInRowParams{
				LastError: w.lastError, RetryInMs: retryIn, Unspent: unspent, Attempt: attempt, DoneStep: done.step,
				DoneOutcome: done.outcome, DoneProviderID: done.providerID, TenantID: tenant, ActorID: actor, Key: key,
				LeaseToken: token,
			}), read: readFenced}, nil
		}
		return keyStatement{st: keystore.BindRelease(&keystore.ReleaseParams{
			Key: key, LastError: w.lastError, RetryInMs: retryIn, Unspent: unspent, TenantID: tenant, ActorID: actor,
			LeaseToken: token, DoneOutcome: done.outcome, DoneProviderID: done.providerID, DoneStep: done.step,
			Attempt: attempt,
		}), read: readFenced}, nil
	case writePark:
		if inRow {
			return keyStatement{st: keystore.BindParkCallInRow(&keystore.ParkCallInRowParams{
				Key: key, TenantID: tenant, ActorID: actor, RecoveryPoint: w.recoveryPoint, LastError: w.lastError,
				ParkedReason: string(w.reason), Attempt: attempt, DoneStep: done.step, DoneOutcome: done.outcome,
				DoneProviderID: done.providerID, LeaseToken: token,
			}), read: readFenced}, nil
		}
		return keyStatement{st: keystore.BindPark(&keystore.ParkParams{
			Key: key, TenantID: tenant, ActorID: actor, RecoveryPoint: w.recoveryPoint, LastError: w.lastError,
			ParkedReason: string(w.reason), LeaseToken: token, DoneOutcome: done.outcome,
			DoneProviderID: done.providerID, DoneStep: done.step, Attempt: attempt,
		}), read: readFenced}, nil
	}
	return keyStatement{}, fmt.Errorf("saga: no statement writes a key write of kind %d", w.kind)
}

// textOrNull is s as a text parameter, NULL for "".
func textOrNull(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

// claim binds the claim of a key in the state w describes.
func (w *keyWrite) claim(h *holder, req *Request, hash []byte, state []byte) (keyStatement, error) {
	trace := textOrNull(w.traceContext)
	switch w.status {
	case KeyStatusCompleted:
		status, headers, body, err := encodeResponse(w.response)
		if err != nil {
			return keyStatement{}, err
		}
		p := keystore.ClaimCompletedParams{TenantID: req.Scope.Tenant, ActorID: req.Scope.Actor, Key: req.Key,
			Operation: req.operation, Method: req.Method, Path: req.Path, RequestHash: hash, State: state,
			ResponseStatus: status, ResponseHeaders: headers, ResponseBody: body, RetentionMs: millis(w.retention),
			LeaseToken: h.token, TraceContext: trace}
		if w.orNothing {
			orNothing := keystore.ClaimCompletedOrNothingParams(p)
			return keyStatement{st: keystore.BindClaimCompletedOrNothing(&orNothing), exec: true}, nil
		}
		return keyStatement{st: keystore.BindClaimCompleted(&p), exec: true}, nil
	case KeyStatusParked:
		if !w.orNothing {
			return keyStatement{}, errors.New("saga: a parked key is claimed only outside a phase")
		}
		return keyStatement{st: keystore.BindClaimParkedOrNothing(&keystore.ClaimParkedOrNothingParams{
			TenantID: req.Scope.Tenant, ActorID: req.Scope.Actor, Key: req.Key, Operation: req.operation,
			Method: req.Method, Path: req.Path, RequestHash: hash, RecoveryPoint: w.recoveryPoint, State: state,
			LastError: w.lastError, ParkedReason: string(w.reason), LeaseToken: h.token, TraceContext: trace,
		}), exec: true}, nil
	}
	if w.next == nil {
		if w.orNothing {
			return keyStatement{}, errors.New("saga: a started key is claimed outside a phase only to journal a call")
		}
		return keyStatement{st: keystore.BindClaimStarted(&keystore.ClaimStartedParams{
			TenantID: req.Scope.Tenant, ActorID: req.Scope.Actor, Key: req.Key, Operation: req.operation,
			Method: req.Method, Path: req.Path, RequestHash: hash, RequestBody: req.Body,
			RecoveryPoint: w.recoveryPoint, State: state, LeaseToken: h.token, LeaseMs: millis(w.lease),
			TraceContext: trace,
		}), read: readClaimed}, nil
	}
	p := keystore.ClaimStartedJournalParams{TenantID: req.Scope.Tenant, ActorID: req.Scope.Actor, Key: req.Key,
		Operation: req.operation, Method: req.Method, Path: req.Path, RequestHash: hash, RequestBody: req.Body,
		RecoveryPoint: w.recoveryPoint, State: state, LeaseToken: h.token, LeaseMs: millis(w.lease),
		TraceContext: trace, CallStep: w.next.step, CallReference: textOrNull(w.next.reference),
		CallMaxInFlightMs: ceilMillis(w.next.window)}
	if w.orNothing {
		orNothing := keystore.ClaimStartedJournalOrNothingParams(p)
		return keyStatement{st: keystore.BindClaimStartedJournalOrNothing(&orNothing), read: readClaimed}, nil
	}
	return keyStatement{st: keystore.BindClaimStartedJournal(&p), read: readClaimed}, nil
}

func readClaimed(st *keystore.Statement, row pgx.Row, out *written) error {
	if err := st.Scan(row, &out.claimed); err != nil {
		return err
	}
	out.createdAt = out.claimed.CreatedAt.Time
	out.leaseLeft = time.Duration(out.claimed.LeaseLeftMs) * time.Millisecond
	return nil
}

// readFenced reads the row of a fenced write that reports nothing: its fence, and a count.
func readFenced(st *keystore.Statement, row pgx.Row, _ *written) error {
	return st.Discard(row, 2)
}

// readAlone reads the row of a fenced write that goes alone (noRowIsFence), which reports
// nothing.
func readAlone(st *keystore.Statement, row pgx.Row, _ *written) error {
	return st.Discard(row, 1)
}

func readAdvanced(st *keystore.Statement, row pgx.Row, out *written) error {
	if err := st.Scan(row, &out.advanced); err != nil {
		return err
	}
	out.leaseLeft = time.Duration(out.advanced.LeaseLeftMs) * time.Millisecond
	out.dbNow = out.advanced.DbNow.Time
	var err error
	out.prior, err = decodeCalls(out.advanced.PriorCalls, nil)
	return err
}

// writeKey runs a key write on its own, outside any phase: a release, a park, a completion after
// a call, the journal row of a call that no phase precedes, a claim of a key whose first step
// wrote nothing. A claim with orNothing reports false, writing nothing, when the key exists.
// A fenced write returns ErrLeaseLost, writing nothing, when another execution took the key
// over.
func writeKey(ctx context.Context, q queryer, h *holder, req *Request, hash []byte, w *keyWrite) (*written, bool, error) {
	s, err := w.statement(h, req, hash)
	if err != nil {
		return nil, false, err
	}
	defer s.release()
	out := &written{}
	if s.exec {
		rows, err := s.st.Exec(ctx, q)
		if err != nil {
			return nil, false, fmt.Errorf("error writing key: %w", asDuplicate(err))
		}
		return out, rows == 1, nil
	}
	err = s.read(s.st, q.QueryRow(ctx, s.st.SQL, s.st.Args...), out)
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
