-- Park parks the key the execution holds for an operator (started → failed), with its reason, at
-- the recovery point where it stands (or "compensated"), and wakes the duplicates waiting for it
-- as Complete does. It records the outcome of the call just made in its pgsaga_call row. Fenced
-- (Complete).
-- name: Park :one
WITH k AS (
    UPDATE pgsaga_key r SET status = 'failed', recovery_point = @recovery_point, locked_until = NULL,
        last_error = @last_error::text, parked_reason = @parked_reason::text, updated_at = clock_timestamp()
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING r.waiters),
done AS (
    UPDATE pgsaga_call c SET outcome = sqlc.narg(done_outcome)::text, provider_id = sqlc.narg(done_provider_id)::text,
        ended_at = clock_timestamp()
    WHERE sqlc.narg(done_step)::text IS NOT NULL AND c.tenant_id = @tenant_id AND c.actor_id = @actor_id
      AND c.key = @key AND c.step = sqlc.narg(done_step)::text AND c.attempt = @attempt::integer
      AND EXISTS (SELECT FROM k))
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence,
    count(CASE WHEN k.waiters THEN pg_notify('pgsaga_key_done',
        json_build_array(@tenant_id::text, @actor_id::text, @key::text)::text) END) AS notified
FROM k;

-- ParkCallInRow is Park when the call just made is the one the key's claim journaled in the key
-- row.
-- name: ParkCallInRow :one
WITH k AS (
    UPDATE pgsaga_key r SET status = 'failed', recovery_point = @recovery_point, locked_until = NULL,
        last_error = @last_error::text, parked_reason = @parked_reason::text, updated_at = clock_timestamp(),
        call_outcome = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN sqlc.narg(done_outcome)::text ELSE r.call_outcome END,
        call_provider_id = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN sqlc.narg(done_provider_id)::text ELSE r.call_provider_id END,
        call_ended_at = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN clock_timestamp() ELSE r.call_ended_at END
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING r.waiters)
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence,
    count(CASE WHEN k.waiters THEN pg_notify('pgsaga_key_done',
        json_build_array(@tenant_id::text, @actor_id::text, @key::text)::text) END) AS notified
FROM k;
