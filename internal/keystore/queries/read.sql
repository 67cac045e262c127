-- ReadHead is the request path's read of a key: what answering a retry needs and nothing more
-- (no request body, no saved values), the lease and the next attempt as durations on the
-- database clock. One round trip, no transaction.
-- name: ReadHead :one
SELECT operation, method, path, request_hash, status,
    coalesce(parked_reason, '')::text AS parked_reason, coalesce(last_error, '')::text AS last_error,
    response_status, response_headers, response_body,
    (CASE WHEN locked_until > clock_timestamp()
        THEN (extract(epoch FROM locked_until - clock_timestamp()) * 1000000)::bigint ELSE 0 END)::bigint AS lease_left_us,
    (extract(epoch FROM next_attempt_at - clock_timestamp()) * 1000000)::bigint AS next_attempt_in_us,
    recovery_point, (extract(epoch FROM clock_timestamp() - updated_at) * 1000000)::bigint AS since_write_us
FROM pgsaga_key WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key;

-- LookupKey reads one whole key, for an operator or a resume.
-- name: LookupKey :one
SELECT sqlc.embed(pgsaga_key), coalesce(locked_until > clock_timestamp(), false)::boolean AS leased,
    clock_timestamp()::timestamptz AS db_now
FROM pgsaga_key WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key;

-- LockKeyToSettle reads a key to settle and locks it for the settlement's transaction.
-- name: LockKeyToSettle :one
SELECT sqlc.embed(pgsaga_key), coalesce(locked_until > clock_timestamp(), false)::boolean AS leased,
    clock_timestamp()::timestamptz AS db_now
FROM pgsaga_key WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key
FOR UPDATE;

-- KeyWrittenBy tells whether the key's row was last written under the lease token: for a key
-- finished by its first phase, whether that execution's claim is the one that stored it. Only
-- an execution that lost its COMMIT's answer asks.
-- name: KeyWrittenBy :one
SELECT coalesce(lease_token = @lease_token, false)::boolean AS ours FROM pgsaga_key
WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key = @key;
