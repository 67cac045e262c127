DROP VIEW pgsaga_call_journal;
INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, ended_at,
    outcome, provider_id, max_in_flight_ms)
SELECT tenant_id, actor_id, key, call_step, 1, call_reference, call_started_at, call_deadline, call_ended_at,
    call_outcome, call_provider_id, call_max_in_flight_ms
FROM pgsaga_key WHERE call_step IS NOT NULL;
DROP INDEX pgsaga_key_call_reference_idx;
ALTER TABLE pgsaga_key
    DROP COLUMN call_step,
    DROP COLUMN call_reference,
    DROP COLUMN call_started_at,
    DROP COLUMN call_deadline,
    DROP COLUMN call_max_in_flight_ms,
    DROP COLUMN call_ended_at,
    DROP COLUMN call_outcome,
    DROP COLUMN call_provider_id;
