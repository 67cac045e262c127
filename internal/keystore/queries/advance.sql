-- Advance commits a phase: it moves the key the execution holds to the recovery point the phase
-- reached (or a compensation's), with the values saved so far, renewing the lease. It records
-- the outcome of the call just made (done_step, in its pgsaga_call row) and, with next_step,
-- journals the call about to be made, returning what the journal says of that call's earlier
-- attempts (under next_steps: its step and the step's former names) and the database's clock,
-- which the engine converts their times from. It changes no indexed column: a HOT update.
-- Fenced like every write of an execution (Complete).
-- name: Advance :one
WITH k AS (
    UPDATE pgsaga_key r SET recovery_point = @recovery_point, state = @state,
        locked_until = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond', updated_at = clock_timestamp()
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING r.locked_until),
done AS (
    UPDATE pgsaga_call c SET outcome = sqlc.narg(done_outcome)::text, provider_id = sqlc.narg(done_provider_id)::text,
        ended_at = clock_timestamp()
    WHERE sqlc.narg(done_step)::text IS NOT NULL AND c.tenant_id = @tenant_id AND c.actor_id = @actor_id
      AND c.key = @key AND c.step = sqlc.narg(done_step)::text AND c.attempt = @attempt::integer
      AND EXISTS (SELECT FROM k)),
journaled AS (
    INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
    SELECT @tenant_id::text, @actor_id::text, @key::text, sqlc.narg(next_step)::text, @attempt::integer,
        sqlc.narg(next_reference)::text, clock_timestamp(), k.locked_until, sqlc.narg(next_max_in_flight_ms)::bigint
    FROM k WHERE sqlc.narg(next_step)::text IS NOT NULL)
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence,
    max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint)::bigint AS lease_left_ms,
    (SELECT coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
            'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at, 'deadline', c.deadline,
            'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome, 'provider_id', c.provider_id)
            ORDER BY c.attempt), '[]'::json)
     FROM pgsaga_call_journal c
     WHERE sqlc.narg(next_step)::text IS NOT NULL AND c.tenant_id = @tenant_id AND c.actor_id = @actor_id
       AND c.key = @key AND c.step = ANY(@next_steps::text[]) AND c.attempt < @attempt::integer)::json AS prior_calls,
    clock_timestamp()::timestamptz AS db_now
FROM k;

-- AdvanceCallInRow is Advance when the call just made is the one the key's claim journaled in
-- the key row.
-- name: AdvanceCallInRow :one
WITH k AS (
    UPDATE pgsaga_key r SET recovery_point = @recovery_point, state = @state,
        locked_until = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond', updated_at = clock_timestamp(),
        call_outcome = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN sqlc.narg(done_outcome)::text ELSE r.call_outcome END,
        call_provider_id = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN sqlc.narg(done_provider_id)::text ELSE r.call_provider_id END,
        call_ended_at = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN clock_timestamp() ELSE r.call_ended_at END
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING r.locked_until),
journaled AS (
    INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
    SELECT @tenant_id::text, @actor_id::text, @key::text, sqlc.narg(next_step)::text, @attempt::integer,
        sqlc.narg(next_reference)::text, clock_timestamp(), k.locked_until, sqlc.narg(next_max_in_flight_ms)::bigint
    FROM k WHERE sqlc.narg(next_step)::text IS NOT NULL)
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence,
    max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint)::bigint AS lease_left_ms,
    (SELECT coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
            'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at, 'deadline', c.deadline,
            'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome, 'provider_id', c.provider_id)
            ORDER BY c.attempt), '[]'::json)
     FROM pgsaga_call_journal c
     WHERE sqlc.narg(next_step)::text IS NOT NULL AND c.tenant_id = @tenant_id AND c.actor_id = @actor_id
       AND c.key = @key AND c.step = ANY(@next_steps::text[]) AND c.attempt < @attempt::integer)::json AS prior_calls,
    clock_timestamp()::timestamptz AS db_now
FROM k;
