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

DROP FUNCTION pgsaga_key_expired(text);
