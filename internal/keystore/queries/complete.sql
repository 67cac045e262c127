-- Complete stores the response of a key the execution holds: started → completed. It records
-- the outcome of the call the execution just made (done_step NULL when it made none) in that
-- call's pgsaga_call row, and wakes the duplicates waiting for the key when one set its waiters
-- flag (NOTIFY takes a lock at COMMIT that serialises commits, so only then). Fenced: when
-- another execution took the key over it writes nothing and raises PGS01 (pgsaga_lease_lost),
-- so that a COMMIT queued after it never runs. The completion is never a HOT update (status is
-- in the resumer's partial index), so it writes what it must and no more.
-- name: Complete :one
WITH k AS (
    UPDATE pgsaga_key r SET status = 'completed', recovery_point = 'finished', state = @state, locked_until = NULL,
        response_status = @response_status::integer, response_headers = @response_headers, response_body = @response_body,
        completed_at = clock_timestamp(), expires_at = clock_timestamp() + sqlc.arg(retention_ms)::bigint * interval '1 millisecond',
        updated_at = clock_timestamp()
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

-- CompleteCallInRow is Complete when the call just made is the one the key's claim journaled in
-- the key row: the key's own update records its outcome, and the statement touches no other
-- table.
-- name: CompleteCallInRow :one
WITH k AS (
    UPDATE pgsaga_key r SET status = 'completed', recovery_point = 'finished', state = @state, locked_until = NULL,
        response_status = @response_status::integer, response_headers = @response_headers, response_body = @response_body,
        completed_at = clock_timestamp(), expires_at = clock_timestamp() + sqlc.arg(retention_ms)::bigint * interval '1 millisecond',
        updated_at = clock_timestamp(),
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

-- CompleteCallInRowAlone is CompleteCallInRow for a completion that is its transaction's only
-- statement (the phase sent none): a completion that matches no row commits nothing, so no row
-- back is the fence, and it needs no CTE to raise. The waiters' notification rides in RETURNING.
-- name: CompleteCallInRowAlone :one
UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = @state, locked_until = NULL,
    response_status = @response_status::integer, response_headers = @response_headers, response_body = @response_body,
    completed_at = clock_timestamp(), expires_at = clock_timestamp() + sqlc.arg(retention_ms)::bigint * interval '1 millisecond',
    updated_at = clock_timestamp(),
    call_outcome = CASE WHEN @attempt::integer = 1 AND call_step = sqlc.narg(done_step)::text
        THEN sqlc.narg(done_outcome)::text ELSE call_outcome END,
    call_provider_id = CASE WHEN @attempt::integer = 1 AND call_step = sqlc.narg(done_step)::text
        THEN sqlc.narg(done_provider_id)::text ELSE call_provider_id END,
    call_ended_at = CASE WHEN @attempt::integer = 1 AND call_step = sqlc.narg(done_step)::text
        THEN clock_timestamp() ELSE call_ended_at END
WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key AND lease_token = @lease_token
  AND status = 'started'
RETURNING CASE WHEN waiters THEN pg_notify('pgsaga_key_done',
    json_build_array(@tenant_id::text, @actor_id::text, @key::text)::text) END AS notified;
