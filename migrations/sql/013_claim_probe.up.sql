-- A claim's tombstone check that holds in every isolation level. Migration 010's probe read the
-- tombstones in a snapshot of its own, taken after the claim's wait; in a caller's REPEATABLE
-- READ or SERIALIZABLE transaction (RunTx) a query reads the transaction's snapshot instead,
-- and a GC that committed after it left a key stored again within its tombstone's window.
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
-- key.) In REPEATABLE READ and SERIALIZABLE the snapshot is the transaction's, older still,
-- and the argument is the same. It costs two index probes where 010's cost one: about 4µs of
-- server CPU a claim more (docs/performance.md).
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
