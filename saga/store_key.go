package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// Every statement the engine runs on pgsaga_key, and the call journal rows that ride in them,
// lives in this file; the operators' reads and deletions are in store_read.go. Leases are
// written with clock_timestamp() (the moment of the write), never now() (the transaction's
// start): a phase that waited on a lock must not commit a lease that is already nearly spent.

const keyColumns = `tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, locked_until, lease_token, attempts, attempts_unspent,
	coalesce(last_error, ''), next_attempt_at, coalesce(parked_reason, ''), response_status,
	response_headers, response_body, completed_at, expires_at, created_at, updated_at,
	coalesce(locked_until > clock_timestamp(), false), clock_timestamp()`

// queryer is what the store needs: a pool, a connection or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanKey(row pgx.Row) (*Key, error) {
	var (
		k          Key
		status     string
		reason     string
		state      []byte
		respStatus *int
		respHeader []byte
		respBody   []byte
	)
	err := row.Scan(&k.Scope.Tenant, &k.Scope.Actor, &k.Key, &k.Operation, &k.Method, &k.Path,
		&k.RequestHash, &k.RequestBody, &status, &k.RecoveryPoint, &state, &k.LockedUntil,
		&k.leaseToken, &k.Attempts, &k.attemptsUnspent, &k.LastError, &k.NextAttemptAt, &reason,
		&respStatus, &respHeader, &respBody, &k.CompletedAt, &k.ExpiresAt, &k.CreatedAt, &k.UpdatedAt,
		&k.Leased, &k.DBNow)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrKeyNotFound
		}
		return nil, err
	}
	k.Status, k.ParkedReason = KeyStatus(status), ParkedReason(reason)
	if err := json.Unmarshal(state, &k.State); err != nil {
		return nil, fmt.Errorf("error decoding saved state: %w", err)
	}
	if respStatus != nil {
		k.Response = &Response{Status: *respStatus, Body: respBody, Header: http.Header{}}
		if len(respHeader) > 0 {
			if err := json.Unmarshal(respHeader, &k.Response.Header); err != nil {
				return nil, fmt.Errorf("error decoding stored headers: %w", err)
			}
		}
	}
	return &k, nil
}

const lookupKeySQL = `SELECT ` + keyColumns + ` FROM pgsaga_key
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// lookupKey reads one key; ErrKeyNotFound when there is none.
func lookupKey(ctx context.Context, q queryer, scope Scope, key string) (*Key, error) {
	k, err := scanKey(q.QueryRow(ctx, lookupKeySQL, scope.Tenant, scope.Actor, key))
	if err != nil && !errors.Is(err, ErrKeyNotFound) {
		return nil, fmt.Errorf("error looking up key: %w", err)
	}
	return k, err
}

// keyWrite is a key's next state, written by a claim, a phase, a release, a park or a completion,
// with the call journal rows that ride in the same statement.
type keyWrite struct {
	status        KeyStatus
	recoveryPoint string
	state         map[string]json.RawMessage
	// lease renews a started key's lease from the moment of the write; 0 gives it back.
	lease     time.Duration
	response  *Response     // completed keys
	retention time.Duration // completed keys
	lastError string
	reason    ParkedReason // failed keys
	// retryIn, when set, schedules the next attempt (a transient failure).
	retryIn *time.Duration
	// unspent does not count this execution against the attempt budget (a pending call).
	unspent bool
	// done is the outcome of the call this execution just made.
	done *callDone
	// next journals the call this execution is about to make.
	next *callStart
}

// callDone is an external call's outcome, for its journal row.
type callDone struct {
	step       string
	outcome    phases.CallOutcome
	providerID string
}

// callStart is the journal row of a call about to be sent: its step (with the step's former
// names, under which earlier attempts may be journaled) and its downstream reference.
type callStart struct {
	step      string
	aliases   []string
	reference string
}

// written is what a key write reports back.
type written struct {
	// createdAt is the key's creation time (claims only).
	createdAt time.Time
	// leaseLeft is the lease the write left, measured by the database after writing it.
	leaseLeft time.Duration
	// prior and quietIn describe the earlier attempts of the call w.next journaled.
	prior   []runstate.CallRecord
	quietIn time.Duration
}

func (w *keyWrite) encoded() (state, header []byte, status *int, body []byte, err error) {
	if state, err = json.Marshal(w.state); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("error encoding saved state: %w", err)
	}
	if w.response != nil {
		if header, err = json.Marshal(w.response.Header); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("error encoding response headers: %w", err)
		}
		status, body = &w.response.Status, w.response.Body
		if body == nil {
			body = []byte{}
		}
	}
	return state, header, status, body, nil
}

func (w *keyWrite) journalArgs() (doneStep, doneOutcome, doneProvider, nextStep, nextRef *string, nextNames []string) {
	if d := w.done; d != nil {
		outcome := string(d.outcome)
		doneStep, doneOutcome, doneProvider = &d.step, &outcome, nullIfEmpty(d.providerID)
	}
	if n := w.next; n != nil {
		nextStep, nextRef = &n.step, nullIfEmpty(n.reference)
		nextNames = append([]string{n.step}, n.aliases...)
	}
	return
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// journalNextSQL journals the call about to be sent, for the key written by the CTE k, with the
// key's lease end as the latest moment the call may be sent.
const journalNextSQL = `journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
	SELECT $1, $2, $3, $20, k.attempts, $21, clock_timestamp(), k.locked_until FROM k WHERE $20::text IS NOT NULL)`

// priorCallsSQL lists the earlier attempts of the call being journaled, and how long until every
// one that may have reached the provider has certainly stopped sending: a row's execution stopped
// when it recorded an outcome (ended_at), or at the latest when its lease ended (deadline).
const priorCallsSQL = `LEFT JOIN LATERAL (
	SELECT coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
			'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at,
			'outcome', c.outcome, 'provider_id', c.provider_id) ORDER BY c.attempt), '[]'::json) AS prior,
		coalesce((extract(epoch FROM max(CASE WHEN c.outcome IS DISTINCT FROM 'failed_before'
			THEN coalesce(c.ended_at, c.deadline) END) - clock_timestamp()) * 1000)::bigint, 0) AS quiet_ms
	FROM pgsaga_call c
	WHERE $20::text IS NOT NULL AND c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3
	  AND c.step = ANY($22::text[]) AND c.attempt < k.attempts) p ON true`

const leaseLeftSQL = `coalesce((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint, 0)`

// claimSQL inserts a key no execution has stored yet, directly in the state the write
// describes, with the journal row of a call about to be made. In a phase's commit it raises a
// unique violation on pgsaga_key_pkey when the key exists (so the COMMIT queued after it never
// runs); claimOrNothingSQL returns no row instead.
const (
	claimInsertSQL = `WITH k AS (
	INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash,
		request_body, status, recovery_point, state, lease_token, locked_until, last_error,
		parked_reason, response_status, response_headers, response_body, completed_at, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
		CASE WHEN $9 = 'started' THEN clock_timestamp() + $13::bigint * interval '1 millisecond' END,
		$14, $15, $16, $17, $18,
		CASE WHEN $9 = 'completed' THEN clock_timestamp() END,
		CASE WHEN $9 = 'completed' THEN clock_timestamp() + $19::bigint * interval '1 millisecond' END)`
	claimReturningSQL = `
	RETURNING created_at, attempts, locked_until),
` + journalNextSQL + `
SELECT k.created_at, ` + leaseLeftSQL + ` FROM k`
	claimSQL          = claimInsertSQL + claimReturningSQL
	claimOrNothingSQL = claimInsertSQL + ` ON CONFLICT DO NOTHING` + claimReturningSQL
)

func claimArgs(req *Request, hash []byte, token uuid.UUID, w *keyWrite) ([]any, error) {
	state, header, status, body, err := w.encoded()
	if err != nil {
		return nil, err
	}
	// Only a started key may be resumed, and only resuming needs the request itself: a key
	// stored finished keeps its fingerprint and its response, not a copy of the body.
	requestBody := req.Body
	if w.status != KeyStatusStarted {
		requestBody = []byte{}
	}
	_, _, _, nextStep, nextRef, _ := w.journalArgs()
	return []any{req.Scope.Tenant, req.Scope.Actor, req.Key, req.Operation, req.Method, req.Path,
		hash, requestBody, string(w.status), w.recoveryPoint, state, token, w.lease.Milliseconds(),
		nullIfEmpty(w.lastError), nullIfEmpty(string(w.reason)), status, header, body,
		w.retention.Milliseconds(), nextStep, nextRef}, nil
}

// claimKey claims a key outside any transaction. It reports false, writing nothing, when the key
// already exists: the caller then answers the request from the stored key.
func claimKey(ctx context.Context, q queryer, req *Request, hash []byte, token uuid.UUID, w *keyWrite) (*written, bool, error) {
	args, err := claimArgs(req, hash, token, w)
	if err != nil {
		return nil, false, err
	}
	var (
		out     written
		leftMs  int64
		created time.Time
	)
	err = q.QueryRow(ctx, claimOrNothingSQL, args...).Scan(&created, &leftMs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("error claiming key: %w", err)
	}
	out.createdAt, out.leaseLeft = created, time.Duration(leftMs)*time.Millisecond
	return &out, true, nil
}

// fencedWriteSQL moves a started key the writer holds to its next state, fenced by the lease
// token, records the outcome of the call just made and journals the call about to be made, all
// in one statement. When the token no longer matches (another execution took the key over) it
// raises SQLSTATE PGS01 (pgsaga_lease_lost): the statement writes nothing and, inside a phase,
// the COMMIT sent after it never runs.
const fencedWriteSQL = `WITH k AS (
	UPDATE pgsaga_key SET
		status = $5, recovery_point = $6, state = $7,
		locked_until = CASE WHEN $5 = 'started' THEN clock_timestamp() + $8::bigint * interval '1 millisecond' END,
		response_status = $9, response_headers = $10, response_body = $11,
		completed_at = CASE WHEN $5 = 'completed' THEN clock_timestamp() END,
		expires_at = CASE WHEN $5 = 'completed' THEN clock_timestamp() + $12::bigint * interval '1 millisecond' END,
		last_error = coalesce($13, last_error),
		parked_reason = $14,
		next_attempt_at = coalesce(clock_timestamp() + $15::bigint * interval '1 millisecond', next_attempt_at),
		attempts_unspent = attempts_unspent + $16::integer,
		updated_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
	RETURNING attempts, locked_until),
done AS (
	UPDATE pgsaga_call c SET outcome = $18, provider_id = $19, ended_at = clock_timestamp()
	FROM k WHERE c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3 AND c.step = $17::text
	  AND c.attempt = k.attempts),
` + journalNextSQL + `
SELECT CASE WHEN k.attempts IS NULL THEN pgsaga_lease_lost($3) ELSE k.attempts END,
	` + leaseLeftSQL + `, p.prior, p.quiet_ms
FROM (VALUES (1)) AS one (x) LEFT JOIN k ON true
` + priorCallsSQL

func fencedWriteArgs(scope Scope, key string, token uuid.UUID, w *keyWrite) ([]any, error) {
	state, header, status, body, err := w.encoded()
	if err != nil {
		return nil, err
	}
	var retryIn *int64
	if w.retryIn != nil {
		ms := max(w.retryIn.Milliseconds(), 0)
		retryIn = &ms
	}
	unspent := 0
	if w.unspent {
		unspent = 1
	}
	doneStep, doneOutcome, doneProvider, nextStep, nextRef, nextNames := w.journalArgs()
	return []any{scope.Tenant, scope.Actor, key, token,
		string(w.status), w.recoveryPoint, state, w.lease.Milliseconds(),
		status, header, body, w.retention.Milliseconds(), nullIfEmpty(w.lastError),
		nullIfEmpty(string(w.reason)), retryIn, unspent,
		doneStep, doneOutcome, doneProvider, nextStep, nextRef, nextNames}, nil
}

// scanWritten reads fencedWriteSQL's row.
func scanWritten(row pgx.Row) (*written, error) {
	var (
		attempts int
		leftMs   int64
		prior    []byte
		quietMs  int64
	)
	if err := row.Scan(&attempts, &leftMs, &prior, &quietMs); err != nil {
		return nil, asLeaseLost(err)
	}
	out := &written{leaseLeft: time.Duration(leftMs) * time.Millisecond, quietIn: time.Duration(quietMs) * time.Millisecond}
	if len(prior) > 0 {
		var rows []struct {
			Step       string     `json:"step"`
			Attempt    int        `json:"attempt"`
			Reference  *string    `json:"reference"`
			StartedAt  time.Time  `json:"started_at"`
			EndedAt    *time.Time `json:"ended_at"`
			Outcome    *string    `json:"outcome"`
			ProviderID *string    `json:"provider_id"`
		}
		if err := json.Unmarshal(prior, &rows); err != nil {
			return nil, fmt.Errorf("error decoding the call journal: %w", err)
		}
		for _, r := range rows {
			out.prior = append(out.prior, runstate.CallRecord{Step: r.Step, Attempt: r.Attempt,
				Reference: deref(r.Reference), StartedAt: r.StartedAt, EndedAt: r.EndedAt,
				Outcome: deref(r.Outcome), ProviderID: deref(r.ProviderID)})
		}
	}
	return out, nil
}

// writeKey runs a fenced write on its own (outside a phase): a release, a park, a completion
// after a call, the journal row of a call that no phase precedes. It returns ErrLeaseLost,
// writing nothing, when another execution took the key over.
func writeKey(ctx context.Context, q queryer, scope Scope, key string, token uuid.UUID, w *keyWrite) (*written, error) {
	args, err := fencedWriteArgs(scope, key, token, w)
	if err != nil {
		return nil, err
	}
	out, err := scanWritten(q.QueryRow(ctx, fencedWriteSQL, args...))
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		return nil, fmt.Errorf("error writing key: %w", err)
	}
	return out, err
}

// Errors raised by the engine's statements.
const (
	sqlstateUniqueViolation = "23505"
	sqlstateLeaseLost       = "PGS01"
	keyPrimaryKey           = "pgsaga_key_pkey"
)

// asLeaseLost translates pgsaga_lease_lost's error into ErrLeaseLost.
func asLeaseLost(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateLeaseLost {
		return ErrLeaseLost
	}
	return err
}

// asDuplicate translates a claim's unique violation into errDuplicate.
func asDuplicate(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation && pgErr.ConstraintName == keyPrimaryKey {
		return errDuplicate
	}
	return err
}
