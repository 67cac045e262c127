package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The statements that take and keep leases on pgsaga_key: heartbeats, takeovers, the worker's
// claims and the sweep's reservations.

// newToken is a fresh fencing token. It is sent as pgtype.UUID (binary, 16 bytes): pgx sends a
// google/uuid.UUID through its text form, which costs 19 allocations per statement.
func newToken() pgtype.UUID { return pgtype.UUID{Bytes: uuid.New(), Valid: true} }

// heartbeatSQL extends the lease of a key whose call is under way, and the latest moment the
// call may be sent (its journal row's deadline) with it, fenced like every write ($6: the call's
// step, $7: the execution's attempt); it raises the in-flight window journaled for the attempt
// to $8 when that is longer. heartbeatCallInRowSQL does the same when the call's journal entry
// is in the key row (the call its claim journaled), the deadline computed after the lease so
// never earlier.
const (
	heartbeatSQL = `WITH k AS (` + heartbeatSetSQL + heartbeatTailSQL + `,
journal AS (
	UPDATE pgsaga_call SET deadline = (SELECT locked_until FROM k),
		max_in_flight_ms = greatest(coalesce(max_in_flight_ms, 0), $8)
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $6 AND attempt = $7 AND EXISTS (SELECT FROM k))` +
		heartbeatSelectSQL
	heartbeatCallInRowSQL = `WITH k AS (` + heartbeatSetSQL + `,
		call_deadline = CASE WHEN $7::integer = 1 AND call_step = $6::text
			THEN clock_timestamp() + $5::bigint * interval '1 millisecond' ELSE call_deadline END,
		call_max_in_flight_ms = CASE WHEN $7::integer = 1 AND call_step = $6::text
			THEN greatest(coalesce(call_max_in_flight_ms, 0), $8) ELSE call_max_in_flight_ms END` +
		heartbeatTailSQL + heartbeatSelectSQL
	heartbeatSetSQL = `
	UPDATE pgsaga_key SET locked_until = clock_timestamp() + $5::bigint * interval '1 millisecond',
		updated_at = clock_timestamp()`
	heartbeatTailSQL = `
	` + fencedKeySQL + `
	RETURNING locked_until)`
	heartbeatSelectSQL = `
SELECT ` + fenceSQL + `, max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint) FROM k`
)

// heartbeat renews the lease of a key whose call step runs, journals window as the attempt's
// in-flight window when it is longer than the one journaled (in the key row when inRow), and
// returns the lease left.
func heartbeat(ctx context.Context, q queryer, h *holder, lease time.Duration, step string, window time.Duration, inRow bool) (time.Duration, error) {
	sql := heartbeatSQL
	if inRow {
		sql = heartbeatCallInRowSQL
	}
	var leftMs int64
	err := q.QueryRow(ctx, sql, h.scope.Tenant, h.scope.Actor, h.key, &h.token, lease.Milliseconds(), step, h.attempt,
		ceilMillis(window)).Scan(nil, &leftMs)
	if isFence(err) {
		return 0, ErrLeaseLost
	}
	if err != nil {
		return 0, err
	}
	return time.Duration(leftMs) * time.Millisecond, nil
}

// takeOverParams say which keys a takeover may take.
type takeOverParams struct {
	// ops are the operation names (with aliases) the taker can run.
	ops []string
	// due requires the key's next attempt time to have passed (a client retry, the worker);
	// an operator's resume ignores the schedule.
	due bool
	// parked also takes a parked key, with a fresh attempt budget (an operator's resume).
	parked bool
	// by records an operator's resume in the key's history.
	by string
	// calls journal the call a taken key goes on with, when its recovery point comes right
	// before one.
	calls *resumeCalls
}

// resumeCalls map the recovery points that come right before an external call to that call, for
// every operation a client runs: (stored operation name, stored recovery point) → the call
// step's name. Stored names include aliases, and "started" for an operation that begins with a
// call. A takeover journals the call in its own statement, so a resume that goes straight to a
// call sends it without a write of its own first.
type resumeCalls struct {
	operations, recoveryPoints, steps []string
	// maxAttempts and maxAgeMs are the operation's budget: an execution that will park at once
	// (its budget spent, or the key too old) sends no call, so nothing is journaled for it.
	maxAttempts []int32
	maxAgeMs    []int64
}

// journalResumedCallSQL journals, for each key t took over whose recovery point comes right
// before a call ($4-$8: resumeCalls, in every statement that takes keys over), that call's
// attempt with the new lease's end as its deadline — unless the execution will park at once
// ($9: the attempt budget applies, and it is spent or the key is older than the operation's
// MaxAge), as resume checks again. Its downstream reference is copied from the call's first
// journal entry (in the key row when the key's claim journaled the call, else a pgsaga_call row),
// which the write that reached this recovery point (the phase before the call, or the claim of a
// key that begins with it) committed: the reference derives from the values saved up to that
// point, which do not change until the next phase commits. A key with no such entry (its step
// renamed since) gets none here; the engine then journals the call in a write of its own, as
// before. The attempts a takeover journals are pgsaga_call rows.
const journalResumedCallSQL = `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
	SELECT t.tenant_id, t.actor_id, t.key, m.step, t.attempts, f.reference, clock_timestamp(), t.locked_until
	FROM t
	JOIN unnest($4::text[], $5::text[], $6::text[], $7::integer[], $8::bigint[])
		AS m (operation, recovery_point, step, max_attempts, max_age_ms)
	  ON m.operation = t.operation AND m.recovery_point = t.recovery_point
	 AND (NOT $9::bool OR (t.attempts - t.attempts_unspent <= m.max_attempts
	      AND clock_timestamp() - t.created_at <= m.max_age_ms * interval '1 millisecond'))
	CROSS JOIN LATERAL (
		SELECT c.reference FROM pgsaga_call_journal c
		WHERE c.tenant_id = t.tenant_id AND c.actor_id = t.actor_id AND c.key = t.key AND c.step = m.step
		ORDER BY c.attempt LIMIT 1) f
	RETURNING tenant_id, actor_id, key, step, reference`

// takenColumns are what a takeover returns of each key it took: the key, its fencing token, the
// trace context of the request that claimed it, and the call it journaled with every earlier
// journal row of the key (the engine keeps those of that call's step and its aliases).
const takenColumns = `t.tenant_id, t.actor_id, t.key, t.operation, t.method, t.path, t.request_hash, t.request_body,
	t.status, t.recovery_point, t.state, t.locked_until, t.attempts, t.attempts_unspent,
	t.last_error, t.next_attempt_at, t.parked_reason, t.response_status,
	t.response_headers, t.response_body, t.completed_at, t.expires_at, t.created_at, t.updated_at,
	t.leased, t.db_now, t.lease_token, t.trace_context, j.step, j.reference,
	CASE WHEN j.step IS NOT NULL THEN (SELECT ` + priorCallsJSONSQL + ` FROM pgsaga_call_journal c
		WHERE c.tenant_id = t.tenant_id AND c.actor_id = t.actor_id AND c.key = t.key AND c.attempt < t.attempts) END
FROM t LEFT JOIN journaled j ON j.tenant_id = t.tenant_id AND j.actor_id = t.actor_id AND j.key = t.key`

// takenReturningSQL is keyColumns named for takenColumns.
const takenReturningSQL = `tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, locked_until, attempts, attempts_unspent,
	coalesce(last_error, '') AS last_error, next_attempt_at, coalesce(parked_reason, '') AS parked_reason,
	response_status, response_headers, response_body, completed_at, expires_at, created_at, updated_at,
	coalesce(locked_until > clock_timestamp(), false) AS leased, clock_timestamp() AS db_now, lease_token,
	trace_context`

// takeOverSQL takes the lease of a started key whose lease expired (and, when allowed, a parked
// key) with a new fencing token, counting the execution as an attempt, in one conditional
// UPDATE: of two takers, one wins. It journals the call the key goes on with, when its recovery
// point comes right before one, and records an operator's resume in the key's history.
const takeOverSQL = `WITH t AS (
	UPDATE pgsaga_key SET
		status = 'started', lease_token = $10,
		locked_until = clock_timestamp() + $11::bigint * interval '1 millisecond',
		attempts = attempts + 1,
		attempts_unspent = CASE WHEN status = 'failed' THEN attempts ELSE attempts_unspent END,
		parked_reason = NULL,
		updated_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND operation = ANY($12::text[])
	  AND ((status = 'started' AND (locked_until IS NULL OR locked_until <= clock_timestamp())
	        AND (NOT $13::bool OR next_attempt_at <= clock_timestamp()))
	       OR (status = 'failed' AND $14::bool))
	RETURNING ` + takenReturningSQL + `),
journaled AS (` + journalResumedCallSQL + `),
acted AS (
	INSERT INTO pgsaga_key_action (tenant_id, actor_id, key, by, action)
	SELECT $1, $2, $3, $15, 'resume' FROM t WHERE $15::text IS NOT NULL)
SELECT ` + takenColumns

// takenKey is a key an execution took over, with what its takeover journaled.
type takenKey struct {
	*Key
	token pgtype.UUID
	// call is the call the takeover journaled for this attempt, nil when it journaled none;
	// prior are the key's earlier journal rows (JSON, every step) when it did.
	call  *callStart
	prior []byte
	// traceContext is the W3C traceparent of the request that claimed the key ("" when it was
	// claimed without tracing).
	traceContext string
}

func scanTaken(row pgx.Row) (*takenKey, error) {
	var (
		t        takenKey
		trace    pgtype.Text
		step     pgtype.Text
		ref      pgtype.Text
		keyError error
	)
	t.Key, keyError = scanKey(row, &t.token, &trace, &step, &ref, &t.prior)
	if keyError != nil {
		return nil, keyError
	}
	t.traceContext = trace.String
	if step.Valid {
		t.call = &callStart{step: step.String, reference: ref.String}
	}
	return &t, nil
}

// takeOverKey takes a key over. When it cannot (the lease is live, it is not due, someone else
// took it first, the key finished or was parked, or its operation is not one of p.ops) it
// returns nil and the key as it is; ErrKeyNotFound when there is no such key.
func takeOverKey(ctx context.Context, q queryer, scope Scope, key string, lease time.Duration, p *takeOverParams) (*takenKey, *keyHead, error) {
	token := newToken()
	calls := p.calls
	if calls == nil {
		calls = &resumeCalls{}
	}
	t, err := scanTaken(q.QueryRow(ctx, takeOverSQL, scope.Tenant, scope.Actor, key,
		calls.operations, calls.recoveryPoints, calls.steps, calls.maxAttempts, calls.maxAgeMs, p.due,
		&token, lease.Milliseconds(), p.ops, p.due, p.parked, nullIfEmpty(p.by)))
	if errors.Is(err, ErrKeyNotFound) {
		var h keyHead
		found, err := readHead(ctx, q, scope, key, &h)
		switch {
		case err != nil:
			return nil, nil, err
		case !found:
			return nil, nil, ErrKeyNotFound
		}
		return nil, &h, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("error taking over key: %w", err)
	}
	return t, nil, nil
}

// dueKeysSQL selects up to $3 keys due for an execution: started, lease expired, next attempt
// time passed, not handed to a resume job, of an operation in $1; the longest waiting first. SKIP
// LOCKED lets concurrent claims and sweeps take disjoint sets without waiting on each other.
const dueKeysSQL = `SELECT tenant_id, actor_id, key FROM pgsaga_key
	WHERE status = 'started'
	  AND (locked_until IS NULL OR locked_until <= clock_timestamp())
	  AND next_attempt_at <= clock_timestamp()
	  AND (reserved_until IS NULL OR reserved_until <= clock_timestamp())
	  AND operation = ANY($1::text[])
	ORDER BY next_attempt_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED`

// claimDueSQL takes the leases of up to $3 due keys in one statement, each with its own new
// fencing token, counting an attempt each, and journals the call each goes on with ($4-$9).
const claimDueSQL = `WITH t AS (
	UPDATE pgsaga_key SET
		lease_token = gen_random_uuid(),
		locked_until = clock_timestamp() + $2::bigint * interval '1 millisecond',
		attempts = attempts + 1,
		updated_at = clock_timestamp()
	WHERE (tenant_id, actor_id, key) IN (` + dueKeysSQL + `)
	RETURNING ` + takenReturningSQL + `),
journaled AS (` + journalResumedCallSQL + `)
SELECT ` + takenColumns

// claimDue claims up to limit due keys of ops. The caller must start every one at once: their
// leases run from now.
func claimDue(ctx context.Context, db pgxQuerier, ops []string, calls *resumeCalls, lease time.Duration, limit int) ([]*takenKey, error) {
	rows, err := db.Query(ctx, claimDueSQL, ops, lease.Milliseconds(), limit,
		calls.operations, calls.recoveryPoints, calls.steps, calls.maxAttempts, calls.maxAgeMs, true)
	return collectTaken(rows, err, "error claiming due keys")
}

// collectTaken reads the keys a claim statement took (rows and err from its Query), wrapping
// any error in what.
func collectTaken(rows pgx.Rows, err error, what string) ([]*takenKey, error) {
	if err == nil {
		var taken []*takenKey
		taken, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*takenKey, error) { return scanTaken(row) })
		if err == nil {
			return taken, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", what, err)
}

// claimKeysSQL takes the leases of those of the keys $3/$10/$11 (tenants, actors, keys) that are
// due for an execution (as a takeover with due does: started, lease expired, next attempt time
// passed, of an operation in $1), in one statement, each with its own new fencing token, counting
// an attempt each, and journals the call each goes on with ($4-$9). SKIP LOCKED leaves a key
// another statement is writing to that statement.
const claimKeysSQL = `WITH t AS (
	UPDATE pgsaga_key SET
		lease_token = gen_random_uuid(),
		locked_until = clock_timestamp() + $2::bigint * interval '1 millisecond',
		attempts = attempts + 1,
		updated_at = clock_timestamp()
	WHERE (tenant_id, actor_id, key) IN (
		SELECT k.tenant_id, k.actor_id, k.key FROM pgsaga_key k
		JOIN unnest($3::text[], $10::text[], $11::text[]) AS r (tenant_id, actor_id, key)
		  ON k.tenant_id = r.tenant_id AND k.actor_id = r.actor_id AND k.key = r.key
		-- coalesce(…): not "status = 'started'", which the resumer's partial index serves: with
		-- statistics that think few keys started (a backlog built since the last ANALYZE) the
		-- planner may scan that index for every key of the batch rather than look each up by
		-- primary key (measured: 26 ms instead of 0.5 ms a batch on 10,000 started keys).
		WHERE coalesce(k.status = 'started', false)
		  AND (k.locked_until IS NULL OR k.locked_until <= clock_timestamp())
		  AND k.next_attempt_at <= clock_timestamp()
		  AND k.operation = ANY($1::text[])
		FOR UPDATE OF k SKIP LOCKED)
	RETURNING ` + takenReturningSQL + `),
journaled AS (` + journalResumedCallSQL + `)
SELECT ` + takenColumns

// claimKeys claims those of refs that are due. The caller must start every one at once: their
// leases run from now.
func claimKeys(ctx context.Context, db pgxQuerier, ops []string, calls *resumeCalls, lease time.Duration, refs []KeyRef) ([]*takenKey, error) {
	tenants, actors, keys := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		tenants[i], actors[i], keys[i] = r.Scope.Tenant, r.Scope.Actor, r.Key
	}
	rows, err := db.Query(ctx, claimKeysSQL, ops, lease.Milliseconds(), tenants,
		calls.operations, calls.recoveryPoints, calls.steps, calls.maxAttempts, calls.maxAgeMs, true, actors, keys)
	return collectTaken(rows, err, "error claiming keys")
}

// reserveDueSQL hands up to $3 due keys to resume jobs for $2 ms, so that the next sweeps do not
// list them again while their jobs wait in the queue. If a job never runs, the key falls due
// again when the reservation ends. It does not touch the lease, the schedule or the attempts: a
// client's retry may still take the key over, and the job's takeover counts the attempt.
const reserveDueSQL = `UPDATE pgsaga_key SET
		reserved_until = clock_timestamp() + $2::bigint * interval '1 millisecond'
	WHERE (tenant_id, actor_id, key) IN (` + dueKeysSQL + `)
	RETURNING tenant_id, actor_id, key`

func reserveDue(ctx context.Context, tx pgx.Tx, ops []string, hold time.Duration, limit int) ([]KeyRef, error) {
	rows, err := tx.Query(ctx, reserveDueSQL, ops, hold.Milliseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("error reserving due keys: %w", err)
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyRef, error) {
		var ref KeyRef
		return ref, row.Scan(&ref.Scope.Tenant, &ref.Scope.Actor, &ref.Key)
	})
	if err != nil {
		return nil, fmt.Errorf("error reserving due keys: %w", err)
	}
	return refs, nil
}
