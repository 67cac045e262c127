-- API keys of the service (`pgsaga apikey`): each names the (tenant, actor) scope of the
-- requests that present it. Only a SHA-256 digest of the secret is kept; the id is public (it
-- is part of the secret's text, listed and used to revoke). A revoked key stays, with the time
-- it was revoked, so that the list says who could call when.
CREATE TABLE pgsaga_api_key (
    id          text        NOT NULL,
    tenant_id   text        NOT NULL,
    actor_id    text        NOT NULL,
    secret_hash bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    revoked_at  timestamptz,

    CONSTRAINT pgsaga_api_key_pkey PRIMARY KEY (id),
    CONSTRAINT pgsaga_api_key_tenant_present CHECK (length(tenant_id) BETWEEN 1 AND 64),
    CONSTRAINT pgsaga_api_key_actor_present CHECK (length(actor_id) BETWEEN 1 AND 64),
    CONSTRAINT pgsaga_api_key_hash_size CHECK (length(secret_hash) = 32)
);

CREATE INDEX pgsaga_api_key_created_idx ON pgsaga_api_key (created_at DESC, id DESC);

-- Operators of the console (`pgsaga operator`): a name, recorded in the keys' history for what
-- they do, and a SHA-256 digest of their token, by which a sign-in finds them. A name stays
-- taken after its operator is revoked, so that a history never names two people.
CREATE TABLE pgsaga_operator (
    name        text        NOT NULL,
    token_hash  bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    revoked_at  timestamptz,

    CONSTRAINT pgsaga_operator_pkey PRIMARY KEY (name),
    CONSTRAINT pgsaga_operator_token_hash_key UNIQUE (token_hash),
    CONSTRAINT pgsaga_operator_name_present CHECK (length(name) BETWEEN 1 AND 64),
    CONSTRAINT pgsaga_operator_hash_size CHECK (length(token_hash) = 32)
);
