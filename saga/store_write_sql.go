package saga

// The statements that write a key: the claims (its first write) and the fenced writes of an
// execution that holds it. store_key.go chooses one per write and fills its arguments;
// store_lease.go has the takeovers, the renewals and the resumer's claims.

// The claims: a key's first write, an INSERT in the state its write describes. A claim inside a
// phase raises a unique violation on pgsaga_key_pkey when the key exists, so that the COMMIT
// queued after it never runs; the orNothing forms return no row instead.
const (
	// claimCompletedSQL stores a key finished by its first phase (a single-transaction
	// operation): its response, no lease, no copy of the request body (only resuming needs it,
	// and a finished key is never resumed). The execution's token marks the row as its own, so
	// that an execution whose COMMIT's answer was lost can tell its own commit from a
	// duplicate's when it reads the key back (keyWrittenBy).
	claimCompletedSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, response_status, response_headers,
		response_body, completed_at, expires_at, lease_token)
	VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'completed', 'finished', $8, $9, $10, $11, clock_timestamp(),
		clock_timestamp() + $12::bigint * interval '1 millisecond', $13)`

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
	// ($13-$15: the call's step, reference and the in-flight window journaled with it).
	claimStartedJournalSQL = `WITH k AS (` + claimStartedInsertSQL + `
	RETURNING created_at, locked_until),
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
	SELECT $1, $2, $3, $13, 1, $14, clock_timestamp(), k.locked_until, $15 FROM k)
SELECT k.created_at, (extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint FROM k`
	claimStartedJournalOrNothingSQL = `WITH k AS (` + claimStartedInsertSQL + ` ON CONFLICT DO NOTHING
	RETURNING created_at, locked_until),
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
	SELECT $1, $2, $3, $13, 1, $14, clock_timestamp(), k.locked_until, $15 FROM k)
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
	// and the journal row of the call about to be made ($12 not NULL, with its reference $13 and
	// in-flight window $15), with what the journal says of that call's earlier attempts and the
	// database's clock, which the engine converts their times from. It changes no indexed
	// column: a HOT update.
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
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
	SELECT $1, $2, $3, $12, $11, $13, clock_timestamp(), k.locked_until, $15 FROM k WHERE $12::text IS NOT NULL)
SELECT ` + fenceSQL + `, max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint),
	(SELECT ` + priorCallsJSONSQL + `
	 FROM pgsaga_call c
	 WHERE $12::text IS NOT NULL AND c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3
	   AND c.step = ANY($14::text[]) AND c.attempt < $11),
	clock_timestamp()
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
		'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome, 'provider_id', c.provider_id)
		ORDER BY c.attempt), '[]'::json)`
)
