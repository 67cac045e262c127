-- Retention at any size, and a memory of what it deleted.
--
-- GC walks the completed keys in expiry order by this partial index, each batch resuming at the
-- expiry where the previous one stopped: a batch reads only the keys it deletes, wherever they
-- sit in the heap, however large the table (the BRIN index summarises pages, and once VACUUM
-- lets new keys fill the pages GC freed, every range holds live keys that each batch must read
-- again). A completion writes one entry; a started or parked key none.
CREATE INDEX pgsaga_key_expires_idx ON pgsaga_key (expires_at) WHERE status = 'completed';

-- A deleted key's tombstone: enough to tell a retry of the request it held (410
-- idempotency_key_expired: it never runs again) from another request under the same key (422),
-- for a window longer than the keys' retention. The key itself is not kept, only a digest of it
-- (pgsaga_key_hash), and the request as one digest of its method, path and fingerprint
-- (pgsaga_request_digest): about 200 bytes with its indexes, two fifths of a small completed key.
CREATE TABLE pgsaga_key_tombstone (
    tenant_id      text        NOT NULL,
    actor_id       text        NOT NULL,
    key_hash       bytea       NOT NULL,
    operation      text        NOT NULL,
    request_digest bytea       NOT NULL,
    completed_at   timestamptz NOT NULL,
    -- When the tombstone itself is deleted (its key's completion plus the tombstone window).
    expires_at     timestamptz NOT NULL,

    CONSTRAINT pgsaga_key_tombstone_pkey PRIMARY KEY (tenant_id, actor_id, key_hash)
);

-- Tombstones are deleted in bulk by expiry, by the same keyset walk as the keys.
CREATE INDEX pgsaga_key_tombstone_expires_idx ON pgsaga_key_tombstone (expires_at);

-- The first 16 bytes of the key's SHA-256: a collision between two keys of one scope is as
-- likely as guessing a random 128-bit value.
CREATE FUNCTION pgsaga_key_hash(key text) RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE
RETURN substring(sha256(convert_to(key, 'UTF8')) FROM 1 FOR 16);

-- What a request is, for telling a retry from another request: its method, path and body
-- fingerprint (saga's request_hash), as the engine compares them. A method holds no space and a
-- stored path no NUL, so the parts cannot run into each other.
CREATE FUNCTION pgsaga_request_digest(method text, path text, request_hash bytea) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE
RETURN substring(sha256(convert_to(method || ' ' || path, 'UTF8') || '\x00'::bytea || request_hash) FROM 1 FOR 16);

-- pgsaga_key_unexpired raises SQLSTATE PGS02 when a key about to be stored has a tombstone
-- within its window (one past it, not yet deleted, is as good as gone), which rolls the claim (and the phase it commits with) back: a request under an expired key
-- runs nothing. Claims call it in their RETURNING, once the new row is in: a claim that met a
-- key GC was deleting waited for GC's commit, and a function called after that wait, VOLATILE,
-- reads with a snapshot taken after it, which holds the tombstone GC wrote (a check in the
-- INSERT's own snapshot, taken before the wait, would not see it).
CREATE FUNCTION pgsaga_key_unexpired(tenant_id text, actor_id text, key text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF EXISTS (SELECT FROM pgsaga_key_tombstone t
        WHERE t.tenant_id = pgsaga_key_unexpired.tenant_id AND t.actor_id = pgsaga_key_unexpired.actor_id
            AND t.key_hash = pgsaga_key_hash(pgsaga_key_unexpired.key) AND t.expires_at > now()) THEN
        RAISE EXCEPTION 'idempotency key % expired: its record was deleted by retention', key
            USING ERRCODE = 'PGS02';
    END IF;
    RETURN true;
END
$$;
