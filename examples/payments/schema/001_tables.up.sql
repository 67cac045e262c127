-- The example service's business tables. Every row belongs to a tenant.
CREATE TABLE invoices (
    id         text        PRIMARY KEY,
    tenant_id  text        NOT NULL,
    amount     bigint      NOT NULL,
    currency   text        NOT NULL,
    paid       bigint      NOT NULL DEFAULT 0,
    -- Pending and succeeded payments: what a new payment must fit under. Kept on the row, so the
    -- balance check is one conditional UPDATE that concurrent payments serialise on.
    reserved   bigint      NOT NULL DEFAULT 0,
    status     text        NOT NULL DEFAULT 'open',
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT invoices_amount_positive CHECK (amount > 0),
    CONSTRAINT invoices_paid_within_amount CHECK (paid >= 0 AND paid <= amount),
    CONSTRAINT invoices_reserved_within_amount CHECK (reserved >= paid AND reserved <= amount),
    CONSTRAINT invoices_status_valid CHECK (status IN ('open', 'paid')),
    CONSTRAINT invoices_paid_status CHECK ((status = 'paid') = (paid = amount))
);

CREATE TABLE payments (
    id         text        PRIMARY KEY,
    tenant_id  text        NOT NULL,
    invoice_id text        NOT NULL REFERENCES invoices (id),
    amount     bigint      NOT NULL,
    currency   text        NOT NULL,
    status     text        NOT NULL DEFAULT 'pending',
    charge_id  text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT payments_amount_positive CHECK (amount > 0),
    CONSTRAINT payments_status_valid CHECK (status IN ('pending', 'succeeded', 'declined')),
    CONSTRAINT payments_settled_has_charge CHECK (status = 'pending' OR charge_id IS NOT NULL)
);
CREATE INDEX payments_invoice_idx ON payments (invoice_id);

CREATE TABLE orders (
    id           text        PRIMARY KEY,
    tenant_id    text        NOT NULL,
    total        bigint      NOT NULL,
    status       text        NOT NULL DEFAULT 'served',
    completed_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT orders_total_positive CHECK (total > 0),
    CONSTRAINT orders_status_valid CHECK (status IN ('served', 'completed'))
);

CREATE TABLE sales (
    id         text        PRIMARY KEY,
    tenant_id  text        NOT NULL,
    order_id   text        NOT NULL REFERENCES orders (id),
    total      bigint      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
-- One sale per order, whatever path tries to make a second one.
CREATE UNIQUE INDEX sales_one_per_order ON sales (tenant_id, order_id);
