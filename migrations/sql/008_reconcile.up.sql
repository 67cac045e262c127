-- Reconciliation asks which keys journaled the references of the provider's charges
-- (saga.Client.CallReferenceList), a batch at a time: an index on the journal's references.
CREATE INDEX pgsaga_call_reference_idx ON pgsaga_call (reference);

-- The provider's charges that no key here accounts for, as the worker's reconciliation found
-- them (package reconcile writes it): what a database failover that lost acknowledged commits
-- leaves behind when the client never retried. One row per provider charge.
CREATE TABLE pgsaga_unmatched_charge (
    provider_id text        NOT NULL,
    reference   text        NOT NULL,
    amount      bigint      NOT NULL,
    currency    text        NOT NULL,
    status      text        NOT NULL,
    -- When the provider created the charge, on its clock.
    created_at  timestamptz NOT NULL,
    -- When a reconciliation first found it unmatched, and last found it so.
    found_at    timestamptz NOT NULL DEFAULT now(),
    checked_at  timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT pgsaga_unmatched_charge_pkey PRIMARY KEY (provider_id)
);

CREATE INDEX pgsaga_unmatched_charge_created_idx ON pgsaga_unmatched_charge (created_at);
