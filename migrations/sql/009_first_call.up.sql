-- The journal entry of the call a key's claim journals (the call right after the operation's
-- first phase, or its first step when that is a call: in most operations the only call of the
-- first attempt) lives in the key row itself, in the call_* columns below, instead of a
-- pgsaga_call row of its own. The claim and the completion are the request path's two writes: a
-- row of its own in the journal cost each request an insert with two index entries and an update
-- (docs/performance.md). Every other journal entry (a later attempt's, a second
-- call's, a call journaled by a later phase) stays a pgsaga_call row. pgsaga_call_journal is the
-- whole journal: every reader reads it.
ALTER TABLE pgsaga_key
    -- The call's step (NULL: the key row holds no journal entry), its downstream reference, and
    -- as pgsaga_call's columns of the same names: when the entry was written, the latest moment
    -- the attempt may send (its lease's end, moved by heartbeats), the in-flight window it sent
    -- under, when it ended, its outcome and the provider's id. The attempt is 1.
    ADD COLUMN call_step text,
    ADD COLUMN call_reference text,
    ADD COLUMN call_started_at timestamptz,
    ADD COLUMN call_deadline timestamptz,
    ADD COLUMN call_max_in_flight_ms bigint,
    ADD COLUMN call_ended_at timestamptz,
    ADD COLUMN call_outcome text,
    ADD COLUMN call_provider_id text;

-- Reconciliation finds the keys that journaled a reference (saga.Client.CallReferenceList): the
-- key rows' entries by this index, pgsaga_call's by pgsaga_call_reference_idx. Partial on the
-- journal view's own condition, so that a key with no entry (a single-transaction key) costs it
-- nothing.
CREATE INDEX pgsaga_key_call_reference_idx ON pgsaga_key (call_reference) WHERE call_step IS NOT NULL;

-- The whole call journal: the key rows' entries (attempt 1) and pgsaga_call's rows. A condition
-- on the key's identity, a step or a reference reaches both tables' indexes.
CREATE VIEW pgsaga_call_journal AS
    SELECT tenant_id, actor_id, key, call_step AS step, 1 AS attempt, call_reference AS reference,
        call_started_at AS started_at, call_deadline AS deadline, call_ended_at AS ended_at,
        call_outcome AS outcome, call_provider_id AS provider_id, call_max_in_flight_ms AS max_in_flight_ms
    FROM pgsaga_key WHERE call_step IS NOT NULL
    UNION ALL
    SELECT tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, ended_at,
        outcome, provider_id, max_in_flight_ms
    FROM pgsaga_call;
