-- The key state machine and the call journal's outcome classes, enforced by the database: a
-- writer that breaks them (a bug in the engine, an operator's hand-written UPDATE) is refused
-- at its statement instead of leaving a row that no transition expects. Their cost on every
-- request path is in docs/performance.md.

-- A started key is leased and has no response; a completed key has its response, its expiry
-- and the final recovery point; a parked (failed) key has no response. Every key has been
-- attempted at least once.
ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_state_machine CHECK (
    attempts >= 1 AND
    CASE status
        WHEN 'started' THEN lease_token IS NOT NULL AND response_status IS NULL
        WHEN 'completed' THEN response_status BETWEEN 100 AND 599 AND response_body IS NOT NULL
            AND completed_at IS NOT NULL AND expires_at IS NOT NULL AND recovery_point = 'finished'
        WHEN 'failed' THEN response_status IS NULL
        ELSE false
    END);

-- A call's outcome is one of the five classes (NULL while the call is under way), in the key
-- row's journal entry as in pgsaga_call's rows.
ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_call_outcome CHECK (
    call_outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown'));
ALTER TABLE pgsaga_call ADD CONSTRAINT pgsaga_call_outcome CHECK (
    outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown'));
