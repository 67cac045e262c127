DROP INDEX pgsaga_key_parked_idx;
DROP INDEX pgsaga_key_age_brin;
CREATE INDEX pgsaga_key_expires_idx ON pgsaga_key (expires_at) WHERE status = 'completed';
CREATE INDEX pgsaga_key_created_idx ON pgsaga_key (created_at DESC);
CREATE INDEX pgsaga_key_failed_idx ON pgsaga_key (updated_at) WHERE status = 'failed';

ALTER TABLE pgsaga_key DROP COLUMN waiters;
CREATE FUNCTION pgsaga_key_notify_done() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('pgsaga_key_done', json_build_array(NEW.tenant_id, NEW.actor_id, NEW.key)::text);
    RETURN NULL;
END;
$$;
CREATE TRIGGER pgsaga_key_done
    AFTER UPDATE OF status ON pgsaga_key
    FOR EACH ROW WHEN (OLD.status = 'started' AND NEW.status <> 'started')
    EXECUTE FUNCTION pgsaga_key_notify_done();

ALTER TABLE pgsaga_call ADD CONSTRAINT pgsaga_call_outcome CHECK (
    outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown'));
ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_identity CHECK (
    length(key) BETWEEN 8 AND 255
    AND length(tenant_id) BETWEEN 1 AND 64 AND length(actor_id) BETWEEN 1 AND 64);
ALTER TABLE pgsaga_key ADD CONSTRAINT pgsaga_key_state_machine CHECK (
    attempts >= 1 AND
    CASE status
        WHEN 'started' THEN lease_token IS NOT NULL AND response_status IS NULL
        WHEN 'completed' THEN response_status BETWEEN 100 AND 599 AND response_body IS NOT NULL
            AND completed_at IS NOT NULL AND expires_at IS NOT NULL AND recovery_point = 'finished'
        WHEN 'failed' THEN response_status IS NULL
        ELSE false
    END);
