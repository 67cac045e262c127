-- A claim's tombstone check, read in the claim's own statement: no function call, no snapshot
-- of its own, on the path of every first request.
--
-- Every INSERT of a key row returns, in its RETURNING,
--
--     CASE WHEN EXISTS (the key's tombstone, within its window) OR EXISTS (the key itself)
--         THEN pgsaga_key_expired(key) END
--
-- both read in the statement's snapshot. The row went in, so no live key conflicted: a key the
-- snapshot still holds was deleted after the snapshot was taken, and only GC deletes a key,
-- with its tombstone in the same commit. Either way GC deleted the key: the tombstone, when the
-- snapshot is older than GC's commit, is not in it, but then the key is. (A claim that met a key
-- GC was deleting waited for GC's commit, and its snapshot, taken before the wait, holds the
-- key.) This holds in REPEATABLE READ and SERIALIZABLE too, where the snapshot is the
-- transaction's.
--
-- pgsaga_key_expired raises SQLSTATE PGS02, which rolls the claim (and the phase it commits
-- with) back: a request under an expired key runs nothing. The engine then reads the tombstone
-- in a statement of its own to answer 410 or 422 (or, when the tombstone's window has passed
-- meanwhile, a retry). It is VOLATILE so that the planner never evaluates it ahead of the CASE.
CREATE FUNCTION pgsaga_key_expired(key text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'idempotency key % expired: its record was deleted by retention', key
        USING ERRCODE = 'PGS02';
END
$$;

DROP FUNCTION pgsaga_key_unexpired(text, text, text);
