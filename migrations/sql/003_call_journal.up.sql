-- The call journal, parking reasons, attempt accounting and the operators' history.

-- Why a failed key is parked: attempts_exhausted (its budget or MaxAge ran out), permanent (a
-- failure retrying cannot fix, after compensating), outcome_unknown (a call may have had its
-- effect and nothing can tell: no compensation ran). NULL unless status = 'failed'.
ALTER TABLE pgsaga_key ADD COLUMN parked_reason text;

-- Executions that did not spend the attempt budget: waits on a pending call, and every attempt
-- before an operator's resume (which gives a parked key a fresh budget). The budget spent is
-- attempts - attempts_unspent.
ALTER TABLE pgsaga_key ADD COLUMN attempts_unspent integer NOT NULL DEFAULT 0;

-- The sweep hands a due key to a resume job until then, so that later sweeps do not enqueue it
-- again while its job waits in the queue. It does not delay a client's retry.
ALTER TABLE pgsaga_key ADD COLUMN reserved_until timestamptz;

-- One row per external call attempt: written before the call, in the same fenced statement that
-- renews the key's lease, and completed after it. The engine reads it to know whether an earlier
-- attempt may have reached the provider; operators read it to know what the provider was told.
-- Deleted with its key.
CREATE TABLE pgsaga_call (
    tenant_id   text        NOT NULL,
    actor_id    text        NOT NULL,
    key         text        NOT NULL,
    step        text        NOT NULL,
    -- The key's attempt (execution) that made the call.
    attempt     integer     NOT NULL,
    -- The downstream reference/key the provider saw.
    reference   text,
    started_at  timestamptz NOT NULL,
    -- The latest moment this attempt may send: its execution's lease end, moved by heartbeats.
    deadline    timestamptz NOT NULL,
    ended_at    timestamptz,
    -- NULL while in flight, or forever when its execution died before recording it.
    outcome     text,
    provider_id text,

    CONSTRAINT pgsaga_call_pkey PRIMARY KEY (tenant_id, actor_id, key, step, attempt),
    CONSTRAINT pgsaga_call_outcome CHECK (
        outcome IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown'))
);

-- What operators did to a key (pgsaga resume, pgsaga settle, the console), oldest first.
-- Deleted with its key.
CREATE TABLE pgsaga_key_action (
    id        bigint      GENERATED ALWAYS AS IDENTITY,
    tenant_id text        NOT NULL,
    actor_id  text        NOT NULL,
    key       text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    by        text        NOT NULL,
    action    text        NOT NULL,
    outcome   text,
    note      text,
    reference text,

    CONSTRAINT pgsaga_key_action_pkey PRIMARY KEY (id),
    CONSTRAINT pgsaga_key_action_kind CHECK (action IN ('resume', 'settle'))
);

CREATE INDEX pgsaga_key_action_key_idx ON pgsaga_key_action (tenant_id, actor_id, key, id);
