-- Retention: completed keys past their window go, each leaving a tombstone; tombstones past
-- theirs go. Every batch costs the same per key whatever the table's size and wherever its rows
-- sit in the heap: by expiry a batch walks pgsaga_key_expires_idx from the expiry where the
-- previous batch stopped, so it reads only what it deletes; by age (which no index orders) it
-- reads one range of the heap's pages, so that a run reads each page once. SKIP LOCKED leaves a
-- key a request holds under lock (a replay, a takeover attempt) to a later run. now() rather
-- than clock_timestamp(): the index is searched by a constant.
--
-- A batch's keys take their call journal and history along, and each leaves its tombstone,
-- kept until its completion plus tombstone_ms (none when that has passed already). A key
-- completed again after its tombstone expired replaces that tombstone. Each returns how many
-- keys went (by expiry, and the latest expiry among them: where the next batch starts).
--
-- DeleteByExpiry deletes up to batch completed keys past their own expiry, in expiry order from
-- after on (the previous batch's last expiry).
-- name: DeleteByExpiry :one
WITH gone AS (
    DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
        SELECT k.ctid FROM pgsaga_key k
        WHERE k.status = 'completed' AND k.expires_at >= @after::timestamptz AND k.expires_at <= now()
        ORDER BY k.expires_at LIMIT @batch::integer FOR UPDATE SKIP LOCKED))
    RETURNING tenant_id, actor_id, key, operation, method, path, request_hash, completed_at, expires_at),
calls AS (
    DELETE FROM pgsaga_call c USING gone g
    WHERE c.tenant_id = g.tenant_id AND c.actor_id = g.actor_id AND c.key = g.key),
actions AS (
    DELETE FROM pgsaga_key_action a USING gone g
    WHERE a.tenant_id = g.tenant_id AND a.actor_id = g.actor_id AND a.key = g.key),
tombstones AS (
    INSERT INTO pgsaga_key_tombstone (tenant_id, actor_id, key_hash, operation, request_digest, completed_at, expires_at)
    SELECT g.tenant_id, g.actor_id, pgsaga_key_hash(g.key), g.operation, pgsaga_request_digest(g.method, g.path, g.request_hash),
        g.completed_at, g.completed_at + sqlc.arg(tombstone_ms)::bigint * interval '1 millisecond'
    FROM gone g WHERE g.completed_at + sqlc.arg(tombstone_ms)::bigint * interval '1 millisecond' > now()
    ON CONFLICT (tenant_id, actor_id, key_hash) DO UPDATE SET operation = EXCLUDED.operation,
        request_digest = EXCLUDED.request_digest, completed_at = EXCLUDED.completed_at, expires_at = EXCLUDED.expires_at)
SELECT count(*)::integer AS deleted, max(expires_at)::timestamptz AS last_expiry FROM gone;

-- DeleteByAge deletes the completed keys that completed at least older_than_ms ago in the
-- heap's pages from from_page up to (not including) to_page: a TID range scan, which reads
-- those pages only.
-- name: DeleteByAge :one
WITH gone AS (
    DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
        SELECT k.ctid FROM pgsaga_key k
        WHERE k.ctid >= format('(%s,0)', sqlc.arg(from_page)::bigint)::tid
            AND k.ctid < format('(%s,0)', sqlc.arg(to_page)::bigint)::tid
            AND k.status = 'completed' AND k.completed_at <= now() - sqlc.arg(older_than_ms)::bigint * interval '1 millisecond'
        FOR UPDATE SKIP LOCKED))
    RETURNING tenant_id, actor_id, key, operation, method, path, request_hash, completed_at, expires_at),
calls AS (
    DELETE FROM pgsaga_call c USING gone g
    WHERE c.tenant_id = g.tenant_id AND c.actor_id = g.actor_id AND c.key = g.key),
actions AS (
    DELETE FROM pgsaga_key_action a USING gone g
    WHERE a.tenant_id = g.tenant_id AND a.actor_id = g.actor_id AND a.key = g.key),
tombstones AS (
    INSERT INTO pgsaga_key_tombstone (tenant_id, actor_id, key_hash, operation, request_digest, completed_at, expires_at)
    SELECT g.tenant_id, g.actor_id, pgsaga_key_hash(g.key), g.operation, pgsaga_request_digest(g.method, g.path, g.request_hash),
        g.completed_at, g.completed_at + sqlc.arg(tombstone_ms)::bigint * interval '1 millisecond'
    FROM gone g WHERE g.completed_at + sqlc.arg(tombstone_ms)::bigint * interval '1 millisecond' > now()
    ON CONFLICT (tenant_id, actor_id, key_hash) DO UPDATE SET operation = EXCLUDED.operation,
        request_digest = EXCLUDED.request_digest, completed_at = EXCLUDED.completed_at, expires_at = EXCLUDED.expires_at)
SELECT count(*)::integer AS deleted FROM gone;

-- HeapPages is how many pages the key table has now: a run by age walks them, and keys stored
-- after it began are younger than any it deletes.
-- name: HeapPages :one
SELECT (pg_relation_size('pgsaga_key') / current_setting('block_size')::bigint)::bigint AS pages;

-- DeleteTombstones deletes up to batch tombstones past their window, in expiry order from after
-- on.
-- name: DeleteTombstones :one
WITH gone AS (
    DELETE FROM pgsaga_key_tombstone WHERE ctid = ANY (ARRAY(
        SELECT t.ctid FROM pgsaga_key_tombstone t
        WHERE t.expires_at >= @after::timestamptz AND t.expires_at <= now()
        ORDER BY t.expires_at LIMIT @batch::integer FOR UPDATE SKIP LOCKED))
    RETURNING expires_at)
SELECT count(*)::integer AS deleted, max(expires_at)::timestamptz AS last_expiry FROM gone;

-- CountByExpiry counts the completed keys past their own expiry (a dry run).
-- name: CountByExpiry :one
SELECT count(*)::integer AS keys FROM pgsaga_key WHERE status = 'completed' AND expires_at <= now();

-- CountByAge counts the completed keys that completed at least older_than_ms ago (a dry run).
-- name: CountByAge :one
SELECT count(*)::integer AS keys FROM pgsaga_key
WHERE status = 'completed' AND completed_at <= now() - sqlc.arg(older_than_ms)::bigint * interval '1 millisecond';

-- ReadTombstone reads the tombstone of a key, within its window, and compares it with a request
-- (method, path, fingerprint) by pgsaga_request_digest, the rule GC wrote it by.
-- name: ReadTombstone :one
SELECT operation, (request_digest = pgsaga_request_digest(@method::text, @path::text, @request_hash::bytea))::boolean AS same_request,
    completed_at
FROM pgsaga_key_tombstone
WHERE tenant_id = @tenant_id AND actor_id = @actor_id AND key_hash = pgsaga_key_hash(@key::text) AND expires_at > now();
