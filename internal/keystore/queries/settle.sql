-- SettleKey completes a parked key with the response an operator's settlement produced, and
-- records the decision in the key's history, in the settlement's transaction (which holds the
-- key's row lock: LockKeyToSettle).
-- name: SettleKey :one
WITH k AS (
    UPDATE pgsaga_key u SET
        status = 'completed', recovery_point = 'finished', state = @state,
        locked_until = NULL, parked_reason = NULL,
        response_status = @response_status::integer, response_headers = @response_headers,
        response_body = @response_body, completed_at = clock_timestamp(),
        expires_at = clock_timestamp() + sqlc.arg(retention_ms)::bigint * interval '1 millisecond',
        updated_at = clock_timestamp()
    WHERE u.tenant_id = @tenant_id AND u.actor_id = @actor_id AND u.key = @key AND u.status = 'failed'
    RETURNING 1 AS settled)
INSERT INTO pgsaga_key_action (tenant_id, actor_id, key, by, action, outcome, note, reference)
SELECT @tenant_id::text, @actor_id::text, @key::text, @settled_by::text, 'settle', @outcome::text, @note::text,
    sqlc.narg(reference)::text
FROM k
RETURNING 1 AS recorded;
