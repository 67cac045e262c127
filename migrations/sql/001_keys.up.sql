-- One row per intent: the idempotency key, what it was used for, where its operation stands,
-- who holds it, and the response to replay.
CREATE TABLE pgsaga_key (
    tenant_id        text        NOT NULL,
    actor_id         text        NOT NULL,
    key              text        NOT NULL,
    operation        text        NOT NULL,
    method           text        NOT NULL,
    path             text        NOT NULL,
    request_hash     bytea       NOT NULL,
    request_body     bytea       NOT NULL,
    status           text        NOT NULL DEFAULT 'started',
    recovery_point   text        NOT NULL DEFAULT 'started',
    -- Values phases saved for the phases after them (JSON object).
    state            jsonb       NOT NULL DEFAULT '{}',
    -- The lease, on the database clock, and its fencing token: a writer must present the token.
    locked_until     timestamptz,
    lease_token      uuid,
    attempts         integer     NOT NULL DEFAULT 1,
    last_error       text,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    response_status  integer,
    response_headers jsonb,
    response_body    bytea,
    completed_at     timestamptz,
    -- When GC may delete a completed key (the operation's retention window).
    expires_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT pgsaga_key_pkey PRIMARY KEY (tenant_id, actor_id, key),
    -- The key's alphabet ('!' to '~' without '"' and '\') is checked by saga.ValidateKey before
    -- any statement: a regular expression here would cost a quarter of the claim's throughput.
    CONSTRAINT pgsaga_key_identity CHECK (
        length(key) BETWEEN 8 AND 255
        AND length(tenant_id) BETWEEN 1 AND 64 AND length(actor_id) BETWEEN 1 AND 64),
    -- The key state machine: a started key is leased and has no response; a completed key has
    -- its response, its expiry and the final recovery point; a failed key has no response.
    -- (PostgreSQL prepares CHECK expressions on every INSERT, so the invariants share one.)
    CONSTRAINT pgsaga_key_state_machine CHECK (
        attempts >= 1 AND
        CASE status
            WHEN 'started' THEN lease_token IS NOT NULL AND response_status IS NULL
            WHEN 'completed' THEN response_status BETWEEN 100 AND 599 AND response_body IS NOT NULL
                AND completed_at IS NOT NULL AND expires_at IS NOT NULL AND recovery_point = 'finished'
            WHEN 'failed' THEN response_status IS NULL
            ELSE false
        END)
);

-- The resumer's scan: started keys ordered by when they may be tried again.
CREATE INDEX pgsaga_key_resumable_idx ON pgsaga_key (next_attempt_at) WHERE status = 'started';

-- Retention GC: completed keys by expiry.
CREATE INDEX pgsaga_key_expires_idx ON pgsaga_key (expires_at) WHERE status = 'completed';

-- Operators list keys newest first, and look at parked ones.
CREATE INDEX pgsaga_key_created_idx ON pgsaga_key (created_at DESC);
CREATE INDEX pgsaga_key_failed_idx ON pgsaga_key (updated_at) WHERE status = 'failed';

-- Raised by a phase's fenced write when the key's lease was taken over, so that the COMMIT sent
-- in the same round trip never runs: a zombie's phase commits nothing.
CREATE FUNCTION pgsaga_lease_lost(key text) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the lease of idempotency key % was taken over by another execution', key
        USING ERRCODE = 'PGS01';
END;
$$;

-- Notified when a key that was committed as started leaves that state (completed or parked), so
-- that a duplicate waiting for an in-flight request (Operation.WaitInFlight) wakes up. A
-- single-transaction key is inserted completed and never notifies.
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
