package saga

import (
	"github.com/jackc/pgx/v5/pgtype"
)

// The statements that write a key: the claims (its first write) and the fenced writes of an
// execution that holds it, each beside the parameters it takes, by name and in order.
// store_key.go chooses one per write; store_lease.go has the takeovers, the renewals and the
// resumer's claims.
//
// Every parameter is added through args (args.go), where sending it allocates nothing.

// requestParams open every claim ($1-$7): the request that claims the key. Each claim ends with
// that request's trace context (its W3C traceparent, NULL when it is not traced).
type requestParams struct {
	tenant, actor, key, operation, method, path string
	hash                                        []byte
}

func (p *requestParams) add(a *args) {
	a.text(p.tenant)
	a.text(p.actor)
	a.text(p.key)
	a.text(p.operation)
	a.text(p.method)
	a.text(p.path)
	a.bytea(p.hash)
}

// The claims: a key's first write, an INSERT in the state its write describes. A claim inside a
// phase raises a unique violation on pgsaga_key_pkey when the key exists, so that the COMMIT
// queued after it never runs; the orNothing forms return no row instead. Every claim that
// inserts returns pgsaga_key_unexpired's check (unexpiredSQL), which raises SQLSTATE PGS02 when
// retention deleted the key and left its tombstone: the claim writes nothing.
const (
	// unexpiredSQL is the tombstone check of the key of $1-$3 (migration 010 says why it is
	// in RETURNING).
	unexpiredSQL = `pgsaga_key_unexpired($1, $2, $3)`

	// claimCompletedSQL stores a key finished by its first phase (a single-transaction
	// operation): its response, no lease, no copy of the request body (only resuming needs it,
	// and a finished key is never resumed). The execution's token marks the row as its own, so
	// that an execution whose COMMIT's answer was lost can tell its own commit from a
	// duplicate's when it reads the key back (keyWrittenBy). Parameters: claimCompletedParams.
	claimCompletedInsertSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, response_status, response_headers,
		response_body, completed_at, expires_at, lease_token, trace_context)
	VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'completed', 'finished', $8, $9, $10, $11, clock_timestamp(),
		clock_timestamp() + $12::bigint * interval '1 millisecond', $13, $14)`
	claimCompletedSQL          = claimCompletedInsertSQL + ` RETURNING ` + unexpiredSQL
	claimCompletedOrNothingSQL = claimCompletedInsertSQL + ` ON CONFLICT DO NOTHING RETURNING ` + unexpiredSQL

	// claimStartedSQL stores a started key, leased, at the recovery point its first phase
	// reached. Parameters: claimStartedParams.
	claimStartedInsertSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'started', $9, $10, $11,
		clock_timestamp() + $12::bigint * interval '1 millisecond', $13)`
	claimStartedSQL = claimStartedInsertSQL + claimStartedReturningSQL

	// claimStartedJournalSQL is claimStartedSQL with the journal entry of the call about to be
	// sent (the key's first attempt), in the key row itself (its call_* columns, migration 009):
	// the call's step, its reference, the in-flight window it sends under, and its latest moment
	// to send, the lease's end (computed after it, so never earlier). Parameters:
	// claimStartedParams and callStart's.
	claimStartedJournalInsertSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context,
		call_step, call_reference, call_max_in_flight_ms, call_started_at, call_deadline)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'started', $9, $10, $11,
		clock_timestamp() + $12::bigint * interval '1 millisecond', $13,
		$14, $15, $16, clock_timestamp(), clock_timestamp() + $12::bigint * interval '1 millisecond')`
	claimStartedJournalSQL          = claimStartedJournalInsertSQL + claimStartedReturningSQL
	claimStartedJournalOrNothingSQL = claimStartedJournalInsertSQL + ` ON CONFLICT DO NOTHING` + claimStartedReturningSQL
	claimStartedReturningSQL        = `
	RETURNING ` + unexpiredSQL + `, created_at, (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::bigint`

	// claimParkedOrNothingSQL stores a key parked before any phase committed (a permanent
	// failure of its first step), with the execution's token but no lease, and, as a finished
	// key, no copy of the request body. Parameters: claimParkedParams.
	claimParkedOrNothingSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, last_error, parked_reason, lease_token,
		trace_context)
	VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'failed', $8, $9, $10, $11, $12, $13)
	ON CONFLICT DO NOTHING RETURNING ` + unexpiredSQL
)

// claimCompletedParams are claimCompletedSQL's.
type claimCompletedParams struct {
	requestParams              // $1-$7
	state         []byte       // $8
	status        int32        // $9
	headers, body []byte       // $10, $11
	retentionMs   int64        // $12
	token         *pgtype.UUID // $13
	traceContext  string       // $14
}

func (p *claimCompletedParams) add(a *args) {
	p.requestParams.add(a)
	a.json(p.state)
	a.int(int64(p.status))
	a.json(p.headers)
	a.bytea(p.body)
	a.int(p.retentionMs)
	a.add(p.token)
	a.textOrNull(p.traceContext)
}

// claimStartedParams are claimStartedSQL's, and, with next set, claimStartedJournalSQL's.
type claimStartedParams struct {
	requestParams              // $1-$7
	body          []byte       // $8: the request body, kept for resuming
	recoveryPoint string       // $9
	state         []byte       // $10
	token         *pgtype.UUID // $11
	leaseMs       int64        // $12
	traceContext  string       // $13
	next          *callStart   // $14-$16, for claimStartedJournalSQL
}

func (p *claimStartedParams) add(a *args) {
	p.requestParams.add(a)
	a.bytea(p.body)
	a.text(p.recoveryPoint)
	a.json(p.state)
	a.add(p.token)
	a.int(p.leaseMs)
	a.textOrNull(p.traceContext)
	if p.next != nil {
		p.next.add(a)
	}
}

// add adds the journal entry of the call about to be sent: its step, its downstream reference
// (NULL when none) and the provider's in-flight window journaled with it.
func (c *callStart) add(a *args) {
	a.text(c.step)
	a.textOrNull(c.reference)
	a.int(ceilMillis(c.window))
}

// claimParkedParams are claimParkedOrNothingSQL's.
type claimParkedParams struct {
	requestParams              // $1-$7
	recoveryPoint string       // $8
	state         []byte       // $9
	lastError     string       // $10
	reason        ParkedReason // $11
	token         *pgtype.UUID // $12
	traceContext  string       // $13
}

func (p *claimParkedParams) add(a *args) {
	p.requestParams.add(a)
	a.text(p.recoveryPoint)
	a.json(p.state)
	a.text(p.lastError)
	a.text(string(p.reason))
	a.add(p.token)
	a.textOrNull(p.traceContext)
}

// fencedParams open every fenced write ($1-$8): the key and the execution's lease token, its
// attempt, and the outcome of the call it just made (step NULL when it made none), which
// recordCallSQL records.
type fencedParams struct {
	tenant, actor, key string
	token              *pgtype.UUID
	attempt            int
	done               *callDone
}

func (p *fencedParams) add(a *args) {
	a.text(p.tenant)
	a.text(p.actor)
	a.text(p.key)
	a.add(p.token)
	a.int(int64(p.attempt))
	if d := p.done; d != nil {
		a.text(d.step)
		a.text(string(d.outcome))
		a.textOrNull(d.providerID)
	} else {
		a.add(nil)
		a.add(nil)
		a.add(nil)
	}
}

// The fenced writes of an execution holding a key (status started, its lease token), each
// with the outcome of the call just made. $1-$8 are fencedParams in each; each statement's own
// parameters follow from $9.
//
// Each comes in two forms, by where the journal entry of the call just made lives: its own
// pgsaga_call row (the xSQL form, which also serves a write after no call), or the key row (the
// xCallInRowSQL form: the call the key's claim journaled), where the key's own update records
// the outcome and the statement touches no other table.
const (
	fencedKeySQL = `WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'`

	// recordCallSQL records the outcome of the call the execution just made in its journal row,
	// when it made one and the key's write k wrote: by primary key, from the parameters, never
	// by joining k, which a generic plan made on a small table may turn into a scan of the
	// journal.
	recordCallSQL = `done AS (
	UPDATE pgsaga_call SET outcome = $7, provider_id = $8, ended_at = clock_timestamp()
	WHERE $6::text IS NOT NULL AND tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $6 AND attempt = $5
	  AND EXISTS (SELECT FROM k))`

	// recordCallInRowSQL records the outcome of the call the execution just made in the key
	// row's journal entry, the tail of the key's SET list: only when that entry is the call's
	// (its step, attempt 1), which the engine chose this form for.
	recordCallInRowSQL = `,
		call_outcome = CASE WHEN $5::integer = 1 AND call_step = $6::text THEN $7 ELSE call_outcome END,
		call_provider_id = CASE WHEN $5::integer = 1 AND call_step = $6::text THEN $8 ELSE call_provider_id END,
		call_ended_at = CASE WHEN $5::integer = 1 AND call_step = $6::text THEN clock_timestamp() ELSE call_ended_at END`

	// notifyWaitersSQL wakes the duplicates waiting for this key (waitForKey), only when one
	// set the key's waiters flag: NOTIFY takes a lock at COMMIT that serialises commits.
	notifyWaitersSQL = `count(CASE WHEN k.waiters THEN pg_notify('` + notifyChannel + `',
		json_build_array($1::text, $2::text, $3::text)::text) END)`

	// completeSQL stores the response. The completion is never a HOT update (status is in the
	// resumer's partial index), so it writes what it must and no more. Parameters:
	// completeParams.
	completeSQL          = `WITH k AS (` + completeSetSQL + completeTailSQL + `,` + recordCallSQL + completeSelectSQL
	completeCallInRowSQL = `WITH k AS (` + completeSetSQL + recordCallInRowSQL + completeTailSQL + completeSelectSQL
	completeSetSQL       = `
	UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = $9, locked_until = NULL,
		response_status = $10, response_headers = $11, response_body = $12, completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $13::bigint * interval '1 millisecond', updated_at = clock_timestamp()`
	completeTailSQL = `
	` + fencedKeySQL + `
	RETURNING waiters)`
	completeSelectSQL = `
SELECT ` + fenceSQL + `, ` + notifyWaitersSQL + ` FROM k`

	// completeCallInRowAloneSQL is completeCallInRowSQL for a completion that is its transaction's
	// only statement (the phase sent none, or a call's step answered): a completion that matches
	// no row commits nothing, so no row back is the fence, and it needs no CTE to raise. The
	// waiters' notification rides in RETURNING.
	completeCallInRowAloneSQL = completeSetSQL + recordCallInRowSQL + `
	` + fencedKeySQL + `
	RETURNING CASE WHEN waiters THEN pg_notify('` + notifyChannel + `', json_build_array($1::text, $2::text, $3::text)::text) END`

	// advanceSQL moves the key to the recovery point of the phase that committed (or of a
	// compensation), renewing the lease; with the journal row of the call about to be made
	// ($12 not NULL), it returns what the journal says of that call's earlier attempts and the
	// database's clock, which the engine converts their times from. It changes no indexed
	// column: a HOT update. Parameters: advanceParams.
	advanceSQL          = `WITH k AS (` + advanceSetSQL + advanceKeyTailSQL + `,` + recordCallSQL + `,` + advanceTailSQL
	advanceCallInRowSQL = `WITH k AS (` + advanceSetSQL + recordCallInRowSQL + advanceKeyTailSQL + `,` + advanceTailSQL
	advanceSetSQL       = `
	UPDATE pgsaga_key SET recovery_point = $9, state = $10,
		locked_until = clock_timestamp() + $11::bigint * interval '1 millisecond', updated_at = clock_timestamp()`
	advanceKeyTailSQL = `
	` + fencedKeySQL + `
	RETURNING locked_until)`
	advanceTailSQL = `
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
	SELECT $1, $2, $3, $12, $5, $13, clock_timestamp(), k.locked_until, $14 FROM k WHERE $12::text IS NOT NULL)
SELECT ` + fenceSQL + `, max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint),
	(SELECT ` + priorCallsJSONSQL + `
	 FROM pgsaga_call_journal c
	 WHERE $12::text IS NOT NULL AND c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3
	   AND c.step = ANY($15::text[]) AND c.attempt < $5),
	clock_timestamp()
FROM k`

	// releaseSQL gives the lease back at once after a transient failure and schedules the next
	// attempt. The recovery point and the saved values stay as the last phase committed them.
	// Parameters: releaseParams.
	releaseSQL          = `WITH k AS (` + releaseSetSQL + releaseTailSQL + `,` + recordCallSQL + releaseSelectSQL
	releaseCallInRowSQL = `WITH k AS (` + releaseSetSQL + recordCallInRowSQL + releaseTailSQL + releaseSelectSQL
	releaseSetSQL       = `
	UPDATE pgsaga_key SET locked_until = clock_timestamp(), last_error = $9,
		next_attempt_at = clock_timestamp() + $10::bigint * interval '1 millisecond',
		attempts_unspent = attempts_unspent + $11::integer, updated_at = clock_timestamp()`
	releaseTailSQL = `
	` + fencedKeySQL + `
	RETURNING 1)`
	releaseSelectSQL = `
SELECT ` + fenceSQL + `, count(*) FROM k`

	// parkSQL parks the key for an operator, with its reason, at the recovery point where it
	// stands (or "compensated"). Parameters: parkParams.
	parkSQL          = `WITH k AS (` + parkSetSQL + completeTailSQL + `,` + recordCallSQL + completeSelectSQL
	parkCallInRowSQL = `WITH k AS (` + parkSetSQL + recordCallInRowSQL + completeTailSQL + completeSelectSQL
	parkSetSQL       = `
	UPDATE pgsaga_key SET status = 'failed', recovery_point = $9, locked_until = NULL, last_error = $10,
		parked_reason = $11, updated_at = clock_timestamp()`

	// priorCallsJSONSQL aggregates journal entries c (pgsaga_call_journal), oldest attempt first.
	priorCallsJSONSQL = `coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
		'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at, 'deadline', c.deadline,
		'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome, 'provider_id', c.provider_id)
		ORDER BY c.attempt), '[]'::json)`
)

// completeParams are completeSQL's.
type completeParams struct {
	fencedParams         // $1-$8
	state         []byte // $9
	status        int32  // $10
	headers, body []byte // $11, $12
	retentionMs   int64  // $13
}

func (p *completeParams) add(a *args) {
	p.fencedParams.add(a)
	a.json(p.state)
	a.int(int64(p.status))
	a.json(p.headers)
	a.bytea(p.body)
	a.int(p.retentionMs)
}

// advanceParams are advanceSQL's.
type advanceParams struct {
	fencedParams         // $1-$8
	recoveryPoint string // $9
	state         []byte // $10
	leaseMs       int64  // $11
	// next is the call about to be made ($12-$14), nil when none.
	next *callStart
	// steps are that call's step and its former names ($15), under any of which its earlier
	// attempts may be journaled.
	steps []string
}

func (p *advanceParams) add(a *args) {
	p.fencedParams.add(a)
	a.text(p.recoveryPoint)
	a.json(p.state)
	a.int(p.leaseMs)
	if p.next == nil {
		for range 4 {
			a.add(nil)
		}
		return
	}
	p.next.add(a)
	a.add(p.steps)
}

// releaseParams are releaseSQL's.
type releaseParams struct {
	fencedParams        // $1-$8
	lastError    string // $9
	retryInMs    int64  // $10
	// unspent is 1 when this execution does not count against the attempt budget ($11).
	unspent int64
}

func (p *releaseParams) add(a *args) {
	p.fencedParams.add(a)
	a.text(p.lastError)
	a.int(p.retryInMs)
	a.int(p.unspent)
}

// parkParams are parkSQL's.
type parkParams struct {
	fencedParams               // $1-$8
	recoveryPoint string       // $9
	lastError     string       // $10
	reason        ParkedReason // $11
}

func (p *parkParams) add(a *args) {
	p.fencedParams.add(a)
	a.text(p.recoveryPoint)
	a.text(p.lastError)
	a.text(string(p.reason))
}
