-- Release gives the lease back at once after a transient failure and schedules the next attempt
-- in retry_in_ms; unspent is 1 when this execution does not count against the attempt budget
-- (its call is pending). The recovery point and the saved values stay as the last phase
-- committed them. It records the outcome of the call just made in its pgsaga_call row. Fenced
-- (Complete).
-- name: Release :one
WITH k AS (
    UPDATE pgsaga_key r SET locked_until = clock_timestamp(), last_error = @last_error::text,
        next_attempt_at = clock_timestamp() + sqlc.arg(retry_in_ms)::bigint * interval '1 millisecond',
        attempts_unspent = r.attempts_unspent + @unspent::integer, updated_at = clock_timestamp()
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING 1 AS released),
done AS (
    UPDATE pgsaga_call c SET outcome = sqlc.narg(done_outcome)::text, provider_id = sqlc.narg(done_provider_id)::text,
        ended_at = clock_timestamp()
    WHERE sqlc.narg(done_step)::text IS NOT NULL AND c.tenant_id = @tenant_id AND c.actor_id = @actor_id
      AND c.key = @key AND c.step = sqlc.narg(done_step)::text AND c.attempt = @attempt::integer
      AND EXISTS (SELECT FROM k))
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence, count(*) AS released
FROM k;

-- ReleaseCallInRow is Release when the call just made is the one the key's claim journaled in
-- the key row.
-- name: ReleaseCallInRow :one
WITH k AS (
    UPDATE pgsaga_key r SET locked_until = clock_timestamp(), last_error = @last_error::text,
        next_attempt_at = clock_timestamp() + sqlc.arg(retry_in_ms)::bigint * interval '1 millisecond',
        attempts_unspent = r.attempts_unspent + @unspent::integer, updated_at = clock_timestamp(),
        call_outcome = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN sqlc.narg(done_outcome)::text ELSE r.call_outcome END,
        call_provider_id = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN sqlc.narg(done_provider_id)::text ELSE r.call_provider_id END,
        call_ended_at = CASE WHEN @attempt::integer = 1 AND r.call_step = sqlc.narg(done_step)::text
            THEN clock_timestamp() ELSE r.call_ended_at END
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING 1 AS released)
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence, count(*) AS released
FROM k;
