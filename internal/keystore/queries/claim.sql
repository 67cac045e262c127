-- Every claim returns the tombstone check of migration 013, read in the claim's own snapshot:
-- when the key's tombstone or the key itself is in it, retention deleted the key, and
-- pgsaga_key_expired raises SQLSTATE PGS02, so that the claim writes nothing. (The check is in
-- RETURNING only so that it runs for a row that went in; migration 013 says why it holds.)
--
-- ClaimCompleted stores a key finished by its first phase (a single-transaction operation): its
-- response, no lease, no copy of the request body (only resuming needs it, and a finished key is
-- never resumed). The execution's token marks the row as its own, so that an execution whose
-- COMMIT's answer was lost can tell its own commit from a duplicate's (KeyWrittenBy).
-- name: ClaimCompleted :exec
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
    request_hash, request_body, status, recovery_point, state, response_status, response_headers,
    response_body, completed_at, expires_at, lease_token, trace_context)
VALUES (@tenant_id, @actor_id, @key, @operation, @method, @path, @request_hash, '', 'completed', 'finished',
    @state, @response_status::integer, @response_headers, @response_body, clock_timestamp(),
    clock_timestamp() + sqlc.arg(retention_ms)::bigint * interval '1 millisecond', @lease_token, sqlc.narg(trace_context)::text)
RETURNING CASE WHEN EXISTS (SELECT FROM pgsaga_key_tombstone t WHERE t.tenant_id = @tenant_id AND t.actor_id = @actor_id
        AND t.key_hash = pgsaga_key_hash(@key) AND t.expires_at > now())
    OR EXISTS (SELECT FROM pgsaga_key k WHERE k.tenant_id = @tenant_id AND k.actor_id = @actor_id AND k.key = @key)
    THEN pgsaga_key_expired(@key) ELSE true END AS unexpired;

-- name: ClaimCompletedOrNothing :execrows
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
    request_hash, request_body, status, recovery_point, state, response_status, response_headers,
    response_body, completed_at, expires_at, lease_token, trace_context)
VALUES (@tenant_id, @actor_id, @key, @operation, @method, @path, @request_hash, '', 'completed', 'finished',
    @state, @response_status::integer, @response_headers, @response_body, clock_timestamp(),
    clock_timestamp() + sqlc.arg(retention_ms)::bigint * interval '1 millisecond', @lease_token, sqlc.narg(trace_context)::text)
ON CONFLICT DO NOTHING
RETURNING CASE WHEN EXISTS (SELECT FROM pgsaga_key_tombstone t WHERE t.tenant_id = @tenant_id AND t.actor_id = @actor_id
        AND t.key_hash = pgsaga_key_hash(@key) AND t.expires_at > now())
    OR EXISTS (SELECT FROM pgsaga_key k WHERE k.tenant_id = @tenant_id AND k.actor_id = @actor_id AND k.key = @key)
    THEN pgsaga_key_expired(@key) ELSE true END AS unexpired;

-- ClaimStarted stores a started key, leased, at the recovery point its first phase reached,
-- with the request body kept for resuming.
-- name: ClaimStarted :one
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
    request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context)
VALUES (@tenant_id, @actor_id, @key, @operation, @method, @path, @request_hash, @request_body, 'started',
    @recovery_point, @state, @lease_token, clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
    sqlc.narg(trace_context)::text)
RETURNING CASE WHEN EXISTS (SELECT FROM pgsaga_key_tombstone t WHERE t.tenant_id = @tenant_id AND t.actor_id = @actor_id
        AND t.key_hash = pgsaga_key_hash(@key) AND t.expires_at > now())
    OR EXISTS (SELECT FROM pgsaga_key k WHERE k.tenant_id = @tenant_id AND k.actor_id = @actor_id AND k.key = @key)
    THEN pgsaga_key_expired(@key) ELSE true END AS unexpired, created_at,
    (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::bigint AS lease_left_ms;

-- ClaimStartedJournal is ClaimStarted with the journal entry of the call about to be sent (the
-- key's first attempt) in the key row itself: the call's step, its reference, the in-flight
-- window it sends under, and its latest moment to send, the lease's end.
-- name: ClaimStartedJournal :one
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
    request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context,
    call_step, call_reference, call_max_in_flight_ms, call_started_at, call_deadline)
VALUES (@tenant_id, @actor_id, @key, @operation, @method, @path, @request_hash, @request_body, 'started',
    @recovery_point, @state, @lease_token, clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
    sqlc.narg(trace_context)::text, @call_step::text, sqlc.narg(call_reference)::text, @call_max_in_flight_ms::bigint,
    clock_timestamp(), clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond')
RETURNING CASE WHEN EXISTS (SELECT FROM pgsaga_key_tombstone t WHERE t.tenant_id = @tenant_id AND t.actor_id = @actor_id
        AND t.key_hash = pgsaga_key_hash(@key) AND t.expires_at > now())
    OR EXISTS (SELECT FROM pgsaga_key k WHERE k.tenant_id = @tenant_id AND k.actor_id = @actor_id AND k.key = @key)
    THEN pgsaga_key_expired(@key) ELSE true END AS unexpired, created_at,
    (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::bigint AS lease_left_ms;

-- name: ClaimStartedJournalOrNothing :one
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
    request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context,
    call_step, call_reference, call_max_in_flight_ms, call_started_at, call_deadline)
VALUES (@tenant_id, @actor_id, @key, @operation, @method, @path, @request_hash, @request_body, 'started',
    @recovery_point, @state, @lease_token, clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond',
    sqlc.narg(trace_context)::text, @call_step::text, sqlc.narg(call_reference)::text, @call_max_in_flight_ms::bigint,
    clock_timestamp(), clock_timestamp() + sqlc.arg(lease_ms)::bigint * interval '1 millisecond')
ON CONFLICT DO NOTHING
RETURNING CASE WHEN EXISTS (SELECT FROM pgsaga_key_tombstone t WHERE t.tenant_id = @tenant_id AND t.actor_id = @actor_id
        AND t.key_hash = pgsaga_key_hash(@key) AND t.expires_at > now())
    OR EXISTS (SELECT FROM pgsaga_key k WHERE k.tenant_id = @tenant_id AND k.actor_id = @actor_id AND k.key = @key)
    THEN pgsaga_key_expired(@key) ELSE true END AS unexpired, created_at,
    (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::bigint AS lease_left_ms;

-- ClaimParkedOrNothing stores a key parked before any phase committed (a permanent failure of
-- its first step), with the execution's token but no lease and, as a finished key, no copy of
-- the request body.
-- name: ClaimParkedOrNothing :execrows
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
    request_hash, request_body, status, recovery_point, state, last_error, parked_reason, lease_token,
    trace_context)
VALUES (@tenant_id, @actor_id, @key, @operation, @method, @path, @request_hash, '', 'failed',
    @recovery_point, @state, @last_error::text, @parked_reason::text, @lease_token, sqlc.narg(trace_context)::text)
ON CONFLICT DO NOTHING
RETURNING CASE WHEN EXISTS (SELECT FROM pgsaga_key_tombstone t WHERE t.tenant_id = @tenant_id AND t.actor_id = @actor_id
        AND t.key_hash = pgsaga_key_hash(@key) AND t.expires_at > now())
    OR EXISTS (SELECT FROM pgsaga_key k WHERE k.tenant_id = @tenant_id AND k.actor_id = @actor_id AND k.key = @key)
    THEN pgsaga_key_expired(@key) ELSE true END AS unexpired;
