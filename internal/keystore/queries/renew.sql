-- Heartbeat renews the lease of a key whose call is under way, and the latest moment the call
-- may be sent (its journal row's deadline) with it; it raises the in-flight window journaled for
-- the attempt to window_ms when that is longer. Fenced (Complete).
-- name: Heartbeat :one
WITH k AS (
    UPDATE pgsaga_key r SET locked_until = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
        updated_at = clock_timestamp()
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING r.locked_until),
journal AS (
    UPDATE pgsaga_call c SET deadline = (SELECT locked_until FROM k),
        max_in_flight_ms = greatest(coalesce(c.max_in_flight_ms, 0), @window_ms::bigint)
    WHERE c.tenant_id = @tenant_id AND c.actor_id = @actor_id AND c.key = @key AND c.step = @step::text
      AND c.attempt = @attempt::integer AND EXISTS (SELECT FROM k))
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence,
    max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint)::bigint AS lease_left_ms
FROM k;

-- HeartbeatCallInRow is Heartbeat when the call's journal entry is in the key row (the call the
-- key's claim journaled), its deadline computed after the lease so never earlier.
-- name: HeartbeatCallInRow :one
WITH k AS (
    UPDATE pgsaga_key r SET locked_until = clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
        updated_at = clock_timestamp(),
        call_deadline = CASE WHEN @attempt::integer = 1 AND r.call_step = @step::text
            THEN clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond' ELSE r.call_deadline END,
        call_max_in_flight_ms = CASE WHEN @attempt::integer = 1 AND r.call_step = @step::text
            THEN greatest(coalesce(r.call_max_in_flight_ms, 0), @window_ms::bigint) ELSE r.call_max_in_flight_ms END
    WHERE r.tenant_id = @tenant_id AND r.actor_id = @actor_id AND r.key = @key AND r.lease_token = @lease_token
      AND r.status = 'started'
    RETURNING r.locked_until)
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost(@key) END AS fence,
    max((extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint)::bigint AS lease_left_ms
FROM k;

-- AwaitKey tells the execution holding a started key that a duplicate waits for it: the
-- statement that completes or parks the key notifies pgsaga_key_done only when waiters is set.
-- Setting it takes the key's row lock, so it is serialised with that statement: either the key
-- is still started when the flag is set (and the completion, which follows, notifies), or no row
-- is returned and the key has finished. No index covers waiters: a HOT update.
-- name: AwaitKey :one
UPDATE pgsaga_key SET waiters = true
WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key AND status = 'started'
  AND locked_until > clock_timestamp()
RETURNING locked_until, clock_timestamp()::timestamptz AS db_now;
