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

// Every statement the engine runs on pgsaga_key, and the call journal rows that ride in them,
// lives in this file and in store_lease.go; the operators' reads and deletions are in
// store_read.go. One statement per purpose (a claim, an advance, a completion, a release, a
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
// without a plpgsql function, but it is SQLSTATE class 22, the class of the client's data errors,
// and was measured no faster: the same latency, interleaved, within the noise.)

// fenceSQL, selected over the rows a fenced write wrote (the CTE k), raises when there are none.
const fenceSQL = `CASE WHEN count(*) = 0 THEN pgsaga_lease_lost($3) END`

// headColumns is what answering a retry needs, and nothing more: no request body and no saved
// values (only a resume needs them, and the takeover's RETURNING reads them), and the lease and
// the next attempt as durations on the database clock.
const headColumns = `operation, method, path, request_hash, status,
	coalesce(parked_reason, ''), coalesce(last_error, ''), response_status, response_headers, response_body,
	CASE WHEN locked_until > clock_timestamp()
		THEN (extract(epoch FROM locked_until - clock_timestamp()) * 1000000)::bigint ELSE 0 END,
	(extract(epoch FROM next_attempt_at - clock_timestamp()) * 1000000)::bigint`

// readHeadSQL is the request path's read of a key: one round trip, no transaction.
const readHeadSQL = `SELECT ` + headColumns + ` FROM pgsaga_key WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// keyHead is a stored key as a retry sees it.
type keyHead struct {
	Operation, Method, Path string
	RequestHash             []byte
	Status                  KeyStatus
	ParkedReason            ParkedReason
	LastError               string
	Response                *Response
	// LeaseLeft is how long an execution still holds the key's lease (on the database clock);
	// zero when none does.
	LeaseLeft time.Duration
	// NextAttemptIn is how long until the key's next attempt is due (not positive: it is due).
	NextAttemptIn time.Duration

	// scan holds what a read scans into, in the head itself, so that a read allocates only
	// what it keeps.
	scan headScan
}

// headScan are the scan targets of headColumns.
type headScan struct {
	operation, method, path pgtype.Text
	status, reason          pgtype.Text
	lastError               pgtype.Text
	respStatus              pgtype.Int4
	respHeader, respBody    []byte
	leaseLeft, nextIn       pgtype.Int8
	dest                    [12]any
}

// scanHead reads readHeadSQL's row into h; found is false when there is no such key.
func scanHead(row pgx.Row, h *keyHead) (found bool, err error) {
	sc := &h.scan
	sc.dest = [...]any{&sc.operation, &sc.method, &sc.path, &h.RequestHash, &sc.status, &sc.reason,
		&sc.lastError, &sc.respStatus, &sc.respHeader, &sc.respBody, &sc.leaseLeft, &sc.nextIn}
	err = row.Scan(sc.dest[:]...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h.Operation, h.Method, h.Path = sc.operation.String, sc.method.String, sc.path.String
	h.Status, h.ParkedReason, h.LastError = KeyStatus(sc.status.String), ParkedReason(sc.reason.String), sc.lastError.String
	h.LeaseLeft = time.Duration(sc.leaseLeft.Int64) * time.Microsecond
	h.NextAttemptIn = time.Duration(sc.nextIn.Int64) * time.Microsecond
	h.Response = nil
	if sc.respStatus.Valid {
		if h.Response, err = storedResponseOf(int(sc.respStatus.Int32), sc.respHeader, sc.respBody); err != nil {
			return false, err
		}
	}
	return true, nil
}

// storedResponseOf decodes a stored response.
func storedResponseOf(status int, header, body []byte) (*Response, error) {
	r := &Response{Status: status, Body: body}
	var err error
	if r.Header, err = decodeHeader(header); err != nil {
		return nil, fmt.Errorf("error decoding stored headers: %w", err)
	}
	return r, nil
}

// readHead reads key's head; found is false when there is no such key.
func readHead(ctx context.Context, q queryer, scope Scope, key string, h *keyHead) (found bool, err error) {
	found, err = scanHead(q.QueryRow(ctx, readHeadSQL, scope.Tenant, scope.Actor, key), h)
	if err != nil {
		return false, fmt.Errorf("error reading key: %w", err)
	}
	return found, nil
}

// keyColumns is a whole key, for the operators' reads and for the takeovers that resume it.
const keyColumns = `tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, locked_until, attempts, attempts_unspent,
	coalesce(last_error, ''), next_attempt_at, coalesce(parked_reason, ''), response_status,
	response_headers, response_body, completed_at, expires_at, created_at, updated_at,
	coalesce(locked_until > clock_timestamp(), false), clock_timestamp()`

// queryer is what the store needs: a pool, a connection or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// scanKey reads keyColumns (and, after them, extra) from row.
func scanKey(row pgx.Row, extra ...any) (*Key, error) {
	var (
		k          Key
		status     string
		reason     string
		state      []byte
		respStatus pgtype.Int4
		respHeader []byte
		respBody   []byte
	)
	dest := append([]any{&k.Scope.Tenant, &k.Scope.Actor, &k.Key, &k.Operation, &k.Method, &k.Path,
		&k.RequestHash, &k.RequestBody, &status, &k.RecoveryPoint, &state, &k.LockedUntil,
		&k.Attempts, &k.attemptsUnspent, &k.LastError, &k.NextAttemptAt, &reason,
		&respStatus, &respHeader, &respBody, &k.CompletedAt, &k.ExpiresAt, &k.CreatedAt, &k.UpdatedAt,
		&k.Leased, &k.DBNow}, extra...)
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrKeyNotFound
		}
		return nil, err
	}
	k.Status, k.ParkedReason = KeyStatus(status), ParkedReason(reason)
	if err := json.Unmarshal(state, &k.State); err != nil {
		return nil, fmt.Errorf("error decoding saved state: %w", err)
	}
	if respStatus.Valid {
		var err error
		if k.Response, err = storedResponseOf(int(respStatus.Int32), respHeader, respBody); err != nil {
			return nil, err
		}
	}
	return &k, nil
}

const lookupKeySQL = `SELECT ` + keyColumns + ` FROM pgsaga_key
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// lookupKey reads one whole key; ErrKeyNotFound when there is none.
func lookupKey(ctx context.Context, q queryer, scope Scope, key string) (*Key, error) {
	k, err := scanKey(q.QueryRow(ctx, lookupKeySQL, scope.Tenant, scope.Actor, key))
	if err != nil && !errors.Is(err, ErrKeyNotFound) {
		return nil, fmt.Errorf("error looking up key: %w", err)
	}
	return k, err
}

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

// The claims: a key's first write, an INSERT in the state its write describes. A claim inside a
// phase raises a unique violation on pgsaga_key_pkey when the key exists, so that the COMMIT
// queued after it never runs; the orNothing forms return no row instead.
const (
	// claimCompletedSQL stores a key finished by its first phase (a single-transaction
	// operation): its response, no lease, no copy of the request body (only resuming needs it,
	// and a finished key is never resumed).
	claimCompletedSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, response_status, response_headers,
		response_body, completed_at, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'completed', 'finished', $8, $9, $10, $11, clock_timestamp(),
		clock_timestamp() + $12::bigint * interval '1 millisecond')`

	// claimStartedSQL stores a started key, leased, at the recovery point its first phase
	// reached.
	claimStartedInsertSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, lease_token, locked_until)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'started', $9, $10, $11,
		clock_timestamp() + $12::bigint * interval '1 millisecond')`
	claimStartedSQL = claimStartedInsertSQL + `
	RETURNING created_at, (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::bigint`

	// claimStartedJournalSQL is claimStartedSQL with the journal row of the call about to be
	// sent (the key's first attempt), whose latest moment to send is the lease's end.
	claimStartedJournalSQL = `WITH k AS (` + claimStartedInsertSQL + `
	RETURNING created_at, locked_until),
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
	SELECT $1, $2, $3, $13, 1, $14, clock_timestamp(), k.locked_until FROM k)
SELECT k.created_at, (extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint FROM k`
	claimStartedJournalOrNothingSQL = `WITH k AS (` + claimStartedInsertSQL + ` ON CONFLICT DO NOTHING
	RETURNING created_at, locked_until),
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
	SELECT $1, $2, $3, $13, 1, $14, clock_timestamp(), k.locked_until FROM k)
SELECT k.created_at, (extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint FROM k`

	// claimParkedOrNothingSQL stores a key parked before any phase committed (a permanent
	// failure of its first step), with the execution's token but no lease, and, as a finished
	// key, no copy of the request body.
	claimParkedOrNothingSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, last_error, parked_reason, lease_token)
	VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'failed', $8, $9, $10, $11, $12)
	ON CONFLICT DO NOTHING`
)

// The fenced writes of an execution holding a key (status started, its lease token): $1-$4 are
// the key and the token in each.
const (
	fencedKeySQL = `WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'`

	// notifyWaitersSQL wakes the duplicates waiting for this key (waitForKey), only when one
	// set the key's waiters flag: NOTIFY takes a lock at COMMIT that serialises commits.
	notifyWaitersSQL = `count(CASE WHEN k.waiters THEN pg_notify('` + notifyChannel + `',
		json_build_array($1::text, $2::text, $3::text)::text) END)`

	// completeSQL stores the response. The completion is never a HOT update (status is in the
	// resumer's partial index), so it writes what it must and no more.
	completeKeySQL = `WITH k AS (
	UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = $5, locked_until = NULL,
		response_status = $6, response_headers = $7, response_body = $8, completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $9::bigint * interval '1 millisecond', updated_at = clock_timestamp()
	` + fencedKeySQL + `
	RETURNING waiters)`
	completeSQL = completeKeySQL + `
SELECT ` + fenceSQL + `, ` + notifyWaitersSQL + ` FROM k`

	// completeDoneSQL is completeSQL recording the outcome of the call just made in its journal
	// row (by primary key, from the parameters: never by joining the key's CTE, which a generic
	// plan made on a small table may turn into a scan of the journal).
	completeDoneSQL = completeKeySQL + `,
done AS (
	UPDATE pgsaga_call SET outcome = $11, provider_id = $12, ended_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $10 AND attempt = $13
	  AND EXISTS (SELECT FROM k))
SELECT ` + fenceSQL + `, ` + notifyWaitersSQL + ` FROM k`

	// advanceSQL moves the key to the recovery point of the phase that committed (or of a
	// compensation), renewing the lease; with the outcome of the call just made ($8 not NULL)
	// and the journal row of the call about to be made ($12 not NULL), with what the journal
	// says of that call's earlier attempts and how long until every one that may have reached
	// the provider has certainly stopped sending (its ended_at, or at the latest its deadline).
	// It changes no indexed column: a HOT update.
	advanceSQL = `WITH k AS (
	UPDATE pgsaga_key SET recovery_point = $5, state = $6,
		locked_until = clock_timestamp() + $7::bigint * interval '1 millisecond', updated_at = clock_timestamp()
	` + fencedKeySQL + `
	RETURNING locked_until),
done AS (
	UPDATE pgsaga_call SET outcome = $9, provider_id = $10, ended_at = clock_timestamp()
	WHERE $8::text IS NOT NULL AND tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $8 AND attempt = $11
	  AND EXISTS (SELECT FROM k)),
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
	SELECT $1, $2, $3, $12, $11, $13, clock_timestamp(), k.locked_until FROM k WHERE $12::text IS NOT NULL)
SELECT ` + fenceSQL + `, max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint),
	(SELECT ` + priorCallsJSONSQL + `
	 FROM pgsaga_call c
	 WHERE $12::text IS NOT NULL AND c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3
	   AND c.step = ANY($14::text[]) AND c.attempt < $11),
	(SELECT coalesce((extract(epoch FROM max(CASE WHEN c.outcome IS DISTINCT FROM 'failed_before'
			THEN coalesce(c.ended_at, c.deadline) END) - clock_timestamp()) * 1000)::bigint, 0)
	 FROM pgsaga_call c
	 WHERE $12::text IS NOT NULL AND c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3
	   AND c.step = ANY($14::text[]) AND c.attempt < $11)
FROM k`

	// releaseSQL gives the lease back at once after a transient failure and schedules the next
	// attempt, recording the failure and the outcome of the call just made. The recovery point
	// and the saved values stay as the last phase committed them.
	releaseSQL = `WITH k AS (
	UPDATE pgsaga_key SET locked_until = clock_timestamp(), last_error = $5,
		next_attempt_at = clock_timestamp() + $6::bigint * interval '1 millisecond',
		attempts_unspent = attempts_unspent + $7::integer, updated_at = clock_timestamp()
	` + fencedKeySQL + `
	RETURNING 1),
done AS (
	UPDATE pgsaga_call SET outcome = $9, provider_id = $10, ended_at = clock_timestamp()
	WHERE $8::text IS NOT NULL AND tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $8 AND attempt = $11
	  AND EXISTS (SELECT FROM k))
SELECT ` + fenceSQL + `, count(*) FROM k`

	// parkSQL parks the key for an operator, with its reason, at recovery point $5 (where it
	// stands, or "compensated"), and records the outcome of the call just made.
	parkSQL = `WITH k AS (
	UPDATE pgsaga_key SET status = 'failed', recovery_point = $5, locked_until = NULL, last_error = $6,
		parked_reason = $7, updated_at = clock_timestamp()
	` + fencedKeySQL + `
	RETURNING waiters),
done AS (
	UPDATE pgsaga_call SET outcome = $9, provider_id = $10, ended_at = clock_timestamp()
	WHERE $8::text IS NOT NULL AND tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $8 AND attempt = $11
	  AND EXISTS (SELECT FROM k))
SELECT ` + fenceSQL + `, ` + notifyWaitersSQL + ` FROM k`

	// priorCallsJSONSQL aggregates journal rows c, oldest attempt first.
	priorCallsJSONSQL = `coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
		'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at, 'deadline', c.deadline,
		'outcome', c.outcome, 'provider_id', c.provider_id) ORDER BY c.attempt), '[]'::json)`
)

// keyStatement is one key write, ready to send: its SQL, its arguments and how to read its row.
type keyStatement struct {
	sql  string
	args []any
	// read reads the statement's result into out; nil for statements read with Exec.
	read func(row pgx.Row, out *written) error
	// exec is set for statements that return no row (claims of finished keys): rows tells
	// whether the statement wrote.
	exec bool
}

// statement prepares w as h's write, its arguments in a; req and hash are those of a claim.
func (w *keyWrite) statement(h *holder, req *Request, hash []byte, a *args) (*keyStatement, error) {
	state, err := encodeState(w.state)
	if err != nil {
		return nil, err
	}
	s := a.reset()
	switch w.kind {
	case writeClaim:
		a.text(req.Scope.Tenant)
		a.text(req.Scope.Actor)
		a.text(req.Key)
		a.text(req.Operation)
		a.text(req.Method)
		a.text(req.Path)
		a.bytea(hash)
		switch w.status {
		case KeyStatusCompleted:
			status, header, body, err := encodeResponse(w.response)
			if err != nil {
				return nil, err
			}
			s.sql, s.exec = claimCompletedSQL, true
			if w.orNothing {
				s.sql += ` ON CONFLICT DO NOTHING`
			}
			a.add(state)
			a.int(int64(status))
			a.add(header)
			a.bytea(body)
			a.int(millis(w.retention))
		case KeyStatusFailed:
			if !w.orNothing {
				return nil, errors.New("saga: a parked key is claimed only outside a phase")
			}
			s.sql, s.exec = claimParkedOrNothingSQL, true
			a.text(w.recoveryPoint)
			a.add(state)
			a.text(w.lastError)
			a.text(string(w.reason))
			a.add(&h.token)
		default:
			a.bytea(req.Body)
			a.text(w.recoveryPoint)
			a.add(state)
			a.add(&h.token)
			a.int(millis(w.lease))
			s.read = readClaimed
			switch {
			case w.next != nil && w.orNothing:
				s.sql = claimStartedJournalOrNothingSQL
			case w.next != nil:
				s.sql = claimStartedJournalSQL
			case w.orNothing:
				return nil, errors.New("saga: a started key is claimed outside a phase only to journal a call")
			default:
				s.sql = claimStartedSQL
			}
			if w.next != nil {
				a.text(w.next.step)
				a.textOrNull(w.next.reference)
			}
		}
		s.args = a.slice()
		return s, nil
	}
	a.text(h.scope.Tenant)
	a.text(h.scope.Actor)
	a.text(h.key)
	a.add(&h.token)
	switch w.kind {
	case writeComplete:
		status, header, body, err := encodeResponse(w.response)
		if err != nil {
			return nil, err
		}
		s.sql, s.read = completeSQL, readFenced
		a.add(state)
		a.int(int64(status))
		a.add(header)
		a.bytea(body)
		a.int(millis(w.retention))
		if d := w.done; d != nil {
			s.sql = completeDoneSQL
			a.text(d.step)
			a.text(string(d.outcome))
			a.textOrNull(d.providerID)
			a.int(int64(h.attempt))
		}
	case writeAdvance:
		s.sql, s.read = advanceSQL, readAdvanced
		a.text(w.recoveryPoint)
		a.add(state)
		a.int(millis(w.lease))
		w.doneArgs(h, a)
		if n := w.next; n != nil {
			a.text(n.step)
			a.textOrNull(n.reference)
			a.add(append([]string{n.step}, n.aliases...))
		} else {
			a.add(nil)
			a.add(nil)
			a.add(nil)
		}
	case writeRelease:
		unspent := int64(0)
		if w.unspent {
			unspent = 1
		}
		s.sql, s.read = releaseSQL, readFenced
		a.text(w.lastError)
		a.int(millis(max(w.retryIn, 0)))
		a.int(unspent)
		w.doneArgs(h, a)
	case writePark:
		s.sql, s.read = parkSQL, readFenced
		a.text(w.recoveryPoint)
		a.text(w.lastError)
		a.text(string(w.reason))
		w.doneArgs(h, a)
	}
	s.args = a.slice()
	return s, nil
}

// doneArgs adds the arguments of a write's done CTE ($8-$11).
func (w *keyWrite) doneArgs(h *holder, a *args) {
	if d := w.done; d != nil {
		a.text(d.step)
		a.text(string(d.outcome))
		a.textOrNull(d.providerID)
	} else {
		a.add(nil)
		a.add(nil)
		a.add(nil)
	}
	a.int(int64(h.attempt))
}

func readClaimed(row pgx.Row, out *written) error {
	var leftMs int64
	if err := row.Scan(&out.createdAt, &leftMs); err != nil {
		return err
	}
	out.leaseLeft = time.Duration(leftMs) * time.Millisecond
	return nil
}

// readFenced reads the row of a fenced write that reports nothing: its fence, and a count.
func readFenced(row pgx.Row, _ *written) error {
	return row.Scan(nil, nil)
}

func readAdvanced(row pgx.Row, out *written) error {
	var (
		leftMs  pgtype.Int8
		prior   []byte
		quietMs int64
	)
	if err := row.Scan(nil, &leftMs, &prior, &quietMs); err != nil {
		return err
	}
	out.leaseLeft = time.Duration(leftMs.Int64) * time.Millisecond
	out.quietIn = time.Duration(quietMs) * time.Millisecond
	var err error
	out.prior, err = decodeCalls(prior, nil)
	return err
}

// callJSON is a journal row as priorCallsJSONSQL encodes it.
type callJSON struct {
	Step       string     `json:"step"`
	Attempt    int        `json:"attempt"`
	Reference  *string    `json:"reference"`
	StartedAt  time.Time  `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at"`
	Deadline   time.Time  `json:"deadline"`
	Outcome    *string    `json:"outcome"`
	ProviderID *string    `json:"provider_id"`
}

// decodeCalls decodes priorCallsJSONSQL's rows, keeping those keep accepts (all when nil).
func decodeCalls(raw []byte, keep func(*callJSON) bool) ([]runstate.CallRecord, error) {
	if len(raw) == 0 || string(raw) == "[]" {
		return nil, nil
	}
	var rows []callJSON
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("error decoding the call journal: %w", err)
	}
	var out []runstate.CallRecord
	for i := range rows {
		r := &rows[i]
		if keep != nil && !keep(r) {
			continue
		}
		out = append(out, runstate.CallRecord{Step: r.Step, Attempt: r.Attempt, Reference: deref(r.Reference),
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Outcome: deref(r.Outcome), ProviderID: deref(r.ProviderID)})
	}
	return out, nil
}

// writeKey runs a key write on its own, outside any phase: a release, a park, a completion after
// a call, the journal row of a call that no phase precedes, a claim of a key whose first step
// wrote nothing. A claim with orNothing reports false, writing nothing, when the key exists.
// A fenced write returns ErrLeaseLost, writing nothing, when another execution took the key
// over.
func writeKey(ctx context.Context, q queryer, h *holder, req *Request, hash []byte, w *keyWrite, a *args) (*written, bool, error) {
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
	case w.kind != writeClaim && isFence(err):
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

// isFence reports whether err is the fence's: the lease was taken over.
func isFence(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlstateFence
}

// asDuplicate translates a claim's unique violation into errDuplicate.
func asDuplicate(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation && pgErr.ConstraintName == keyPrimaryKey {
		return errDuplicate
	}
	return err
}
