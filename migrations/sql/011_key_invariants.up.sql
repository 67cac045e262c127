-- The key state machine and the call journal's outcome classes, enforced by the database: a
-- writer that breaks them (a bug in the engine, an operator's hand-written UPDATE) is refused
-- at its statement instead of leaving a row that no transition expects. Their cost on every
-- request path is in docs/performance.md.
--
-- Each rule is a plpgsql function that its CHECK calls. PostgreSQL prepares a table's CHECK
-- expressions anew for every INSERT and UPDATE statement it runs: a CHECK written as the
-- expression itself cost the single-transaction request a third more of the server's CPU, and
-- the phased request two thirds; a call to a function, whose body plpgsql compiles once per
-- session, about half of that.

-- A started key is leased and has no response; a completed key has its response, its expiry
-- and the final recovery point; a parked (failed) key has no response. Every key has been
-- attempted at least once. The call journaled in the key row has an outcome of the five classes,
-- or none yet.
CREATE FUNCTION pgsaga_key_valid(status text, attempts integer, lease_token uuid, response_status integer,
    response_body bytea, completed_at timestamptz, expires_at timestamptz, recovery_point text, call_outcome text)
RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN attempts >= 1
        AND CASE status
            WHEN 'started' THEN lease_token IS NOT NULL AND response_status IS NULL
            WHEN 'completed' THEN response_status BETWEEN 100 AND 599 AND response_body IS NOT NULL
                AND completed_at IS NOT NULL AND expires_at IS NOT NULL AND recovery_point = 'finished'
            WHEN 'failed' THEN response_status IS NULL
            ELSE false
        END
        AND coalesce(pgsaga_call_outcome_valid(call_outcome), true);
END;
$$;

-- A call's outcome is one of the five classes (NULL while the call is under way).
CREATE FUNCTION pgsaga_call_outcome_valid(outcome text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown');
END;
$$;

ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_state_machine CHECK (pgsaga_key_valid(status, attempts,
    lease_token, response_status, response_body, completed_at, expires_at, recovery_point, call_outcome));
ALTER TABLE pgsaga_call ADD CONSTRAINT pgsaga_call_outcome CHECK (pgsaga_call_outcome_valid(outcome));
