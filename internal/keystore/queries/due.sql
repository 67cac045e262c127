-- ClaimDue takes the leases of up to max_keys keys due for an execution (started, due:
-- pgsaga_key_due, not handed to a resume job, of an operation in operations), the longest
-- waiting first, in one statement, each with its own new fencing token, counting an attempt
-- each. SKIP LOCKED lets concurrent claims and sweeps take disjoint sets without waiting on each
-- other. The caller must start every key at once: their leases run from now.
-- Each key it takes whose recovery point comes right before an external call (call_*: for
-- every operation the taker runs, the stored operation name and recovery point, the call's step
-- and the operation's attempt budget) has that call's attempt journaled, with the new lease's end
-- as its deadline, so that a resume that goes straight to the call sends it without a write of
-- its own first; unless, with within_budget, the execution will park at once
-- (pgsaga_budget_left). The attempt's reference is copied from the call's first journal entry,
-- which the write that reached this recovery point committed: the reference derives from the
-- values saved up to that point, which do not change until the next phase commits. A key with no
-- such entry (its step renamed since) gets none; the engine then journals the call in a write of
-- its own. Each key taken comes back whole, with the call journaled for it and, then, the key's
-- earlier journal rows.
-- name: ClaimDue :many
WITH t AS (
    UPDATE pgsaga_key u SET
        lease_token = gen_random_uuid(),
        locked_until = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
        attempts = u.attempts + 1,
        updated_at = clock_timestamp()
    WHERE (u.tenant_id, u.actor_id, u.key) IN (
        SELECT d.tenant_id, d.actor_id, d.key FROM pgsaga_key d
        WHERE d.status = 'started' AND pgsaga_key_due(d.locked_until, d.next_attempt_at)
          AND (d.reserved_until IS NULL OR d.reserved_until <= clock_timestamp())
          AND d.operation = ANY(@operations::text[])
        ORDER BY d.next_attempt_at
        LIMIT sqlc.arg(max_keys)::integer
        FOR UPDATE SKIP LOCKED)
    RETURNING u.tenant_id, u.actor_id, u.key, u.operation, u.method, u.path, u.request_hash, u.request_body,
        u.status, u.recovery_point, u.state, u.locked_until, u.attempts, u.attempts_unspent,
        u.last_error, u.next_attempt_at, u.parked_reason, u.response_status, u.response_headers, u.response_body,
        u.completed_at, u.expires_at, u.created_at, u.updated_at,
        coalesce(u.locked_until > clock_timestamp(), false)::boolean AS leased, clock_timestamp()::timestamptz AS db_now,
        u.lease_token, u.trace_context),
journaled AS (
    INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
    SELECT t.tenant_id, t.actor_id, t.key, m.step, t.attempts, f.reference, clock_timestamp(), t.locked_until
    FROM t
    JOIN ROWS FROM (unnest(@call_operations::text[]), unnest(@call_recovery_points::text[]),
            unnest(@call_steps::text[]), unnest(@call_max_attempts::integer[]), unnest(@call_max_age_ms::bigint[]))
        AS m (operation, recovery_point, step, max_attempts, max_age_ms)
      ON m.operation = t.operation AND m.recovery_point = t.recovery_point
     AND (NOT @within_budget::boolean
          OR pgsaga_budget_left(t.attempts, t.attempts_unspent, t.created_at, m.max_attempts, m.max_age_ms))
    CROSS JOIN LATERAL (
        SELECT c.reference FROM pgsaga_call_journal c
        WHERE c.tenant_id = t.tenant_id AND c.actor_id = t.actor_id AND c.key = t.key AND c.step = m.step
        ORDER BY c.attempt LIMIT 1) f
    RETURNING tenant_id, actor_id, key, step, reference)
SELECT t.tenant_id, t.actor_id, t.key, t.operation, t.method, t.path, t.request_hash, t.request_body,
    t.status, t.recovery_point, t.state, t.locked_until, t.attempts, t.attempts_unspent,
    t.last_error, t.next_attempt_at, t.parked_reason, t.response_status,
    t.response_headers, t.response_body, t.completed_at, t.expires_at, t.created_at, t.updated_at,
    t.leased, t.db_now, t.lease_token, t.trace_context, j.step AS call_step, j.reference AS call_reference,
    (CASE WHEN j.step IS NOT NULL THEN (SELECT coalesce(json_agg(json_build_object('step', c.step,
            'attempt', c.attempt, 'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at,
            'deadline', c.deadline, 'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome,
            'provider_id', c.provider_id) ORDER BY c.attempt), '[]'::json)
        FROM pgsaga_call_journal c
        WHERE c.tenant_id = t.tenant_id AND c.actor_id = t.actor_id AND c.key = t.key AND c.attempt < t.attempts) END)::json
        AS prior_calls
FROM t LEFT JOIN journaled j ON j.tenant_id = t.tenant_id AND j.actor_id = t.actor_id AND j.key = t.key;

-- ClaimKeys takes the leases of those of the keys named (tenant_ids, actor_ids, keys) that are
-- due for an execution, as ClaimDue does. SKIP LOCKED leaves a key another statement is writing
-- to that statement. The caller must start every key at once: their leases run from now.
-- Each key it takes whose recovery point comes right before an external call (call_*: for
-- every operation the taker runs, the stored operation name and recovery point, the call's step
-- and the operation's attempt budget) has that call's attempt journaled, with the new lease's end
-- as its deadline, so that a resume that goes straight to the call sends it without a write of
-- its own first; unless, with within_budget, the execution will park at once
-- (pgsaga_budget_left). The attempt's reference is copied from the call's first journal entry,
-- which the write that reached this recovery point committed: the reference derives from the
-- values saved up to that point, which do not change until the next phase commits. A key with no
-- such entry (its step renamed since) gets none; the engine then journals the call in a write of
-- its own. Each key taken comes back whole, with the call journaled for it and, then, the key's
-- earlier journal rows.
-- name: ClaimKeys :many
WITH t AS (
    UPDATE pgsaga_key u SET
        lease_token = gen_random_uuid(),
        locked_until = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
        attempts = u.attempts + 1,
        updated_at = clock_timestamp()
    WHERE (u.tenant_id, u.actor_id, u.key) IN (
        SELECT d.tenant_id, d.actor_id, d.key FROM pgsaga_key d
        JOIN ROWS FROM (unnest(@tenant_ids::text[]), unnest(@actor_ids::text[]), unnest(@keys::text[]))
            AS r (tenant_id, actor_id, key)
          ON d.tenant_id = r.tenant_id AND d.actor_id = r.actor_id AND d.key = r.key
        -- coalesce(…): not "status = 'started'", which the resumer's partial index serves: with
        -- statistics that think few keys started (a backlog built since the last ANALYZE) the
        -- planner may scan that index for every key of the batch rather than look each up by
        -- primary key (measured: 26 ms instead of 0.5 ms a batch on 10,000 started keys).
        WHERE coalesce(d.status = 'started', false) AND pgsaga_key_due(d.locked_until, d.next_attempt_at)
          AND d.operation = ANY(@operations::text[])
        FOR UPDATE OF d SKIP LOCKED)
    RETURNING u.tenant_id, u.actor_id, u.key, u.operation, u.method, u.path, u.request_hash, u.request_body,
        u.status, u.recovery_point, u.state, u.locked_until, u.attempts, u.attempts_unspent,
        u.last_error, u.next_attempt_at, u.parked_reason, u.response_status, u.response_headers, u.response_body,
        u.completed_at, u.expires_at, u.created_at, u.updated_at,
        coalesce(u.locked_until > clock_timestamp(), false)::boolean AS leased, clock_timestamp()::timestamptz AS db_now,
        u.lease_token, u.trace_context),
journaled AS (
    INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
    SELECT t.tenant_id, t.actor_id, t.key, m.step, t.attempts, f.reference, clock_timestamp(), t.locked_until
    FROM t
    JOIN ROWS FROM (unnest(@call_operations::text[]), unnest(@call_recovery_points::text[]),
            unnest(@call_steps::text[]), unnest(@call_max_attempts::integer[]), unnest(@call_max_age_ms::bigint[]))
        AS m (operation, recovery_point, step, max_attempts, max_age_ms)
      ON m.operation = t.operation AND m.recovery_point = t.recovery_point
     AND (NOT @within_budget::boolean
          OR pgsaga_budget_left(t.attempts, t.attempts_unspent, t.created_at, m.max_attempts, m.max_age_ms))
    CROSS JOIN LATERAL (
        SELECT c.reference FROM pgsaga_call_journal c
        WHERE c.tenant_id = t.tenant_id AND c.actor_id = t.actor_id AND c.key = t.key AND c.step = m.step
        ORDER BY c.attempt LIMIT 1) f
    RETURNING tenant_id, actor_id, key, step, reference)
SELECT t.tenant_id, t.actor_id, t.key, t.operation, t.method, t.path, t.request_hash, t.request_body,
    t.status, t.recovery_point, t.state, t.locked_until, t.attempts, t.attempts_unspent,
    t.last_error, t.next_attempt_at, t.parked_reason, t.response_status,
    t.response_headers, t.response_body, t.completed_at, t.expires_at, t.created_at, t.updated_at,
    t.leased, t.db_now, t.lease_token, t.trace_context, j.step AS call_step, j.reference AS call_reference,
    (CASE WHEN j.step IS NOT NULL THEN (SELECT coalesce(json_agg(json_build_object('step', c.step,
            'attempt', c.attempt, 'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at,
            'deadline', c.deadline, 'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome,
            'provider_id', c.provider_id) ORDER BY c.attempt), '[]'::json)
        FROM pgsaga_call_journal c
        WHERE c.tenant_id = t.tenant_id AND c.actor_id = t.actor_id AND c.key = t.key AND c.attempt < t.attempts) END)::json
        AS prior_calls
FROM t LEFT JOIN journaled j ON j.tenant_id = t.tenant_id AND j.actor_id = t.actor_id AND j.key = t.key;

-- ReserveDue hands up to max_keys due keys to resume jobs for hold_ms, so that the next sweeps
-- do not list them again while their jobs wait in the queue. If a job never runs, the key falls
-- due again when the reservation ends. It does not touch the lease, the schedule or the
-- attempts: a client's retry may still take the key over, and the job's takeover counts the
-- attempt.
-- name: ReserveDue :many
UPDATE pgsaga_key SET
    reserved_until = clock_timestamp() + sqlc.arg(hold_ms)::bigint * interval '1 millisecond'
WHERE (tenant_id, actor_id, key) IN (
    SELECT d.tenant_id, d.actor_id, d.key FROM pgsaga_key d
    WHERE d.status = 'started' AND pgsaga_key_due(d.locked_until, d.next_attempt_at)
      AND (d.reserved_until IS NULL OR d.reserved_until <= clock_timestamp())
      AND d.operation = ANY(@operations::text[])
    ORDER BY d.next_attempt_at
    LIMIT sqlc.arg(max_keys)::integer
    FOR UPDATE SKIP LOCKED)
RETURNING tenant_id, actor_id, key;
