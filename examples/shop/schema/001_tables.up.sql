-- The shop's business tables. Every row belongs to a tenant; names begin shop_ so that the shop
-- and the payments example can share a database.

-- The price list: what an order's price is checked against when it is submitted.
CREATE TABLE shop_products (
    tenant_id  text        NOT NULL,
    sku        text        NOT NULL,
    price      bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sku),
    CONSTRAINT shop_products_price_positive CHECK (price > 0)
);

-- Stock counts: one per intent (the id derives from the idempotency key) and one per location,
-- product and day (the unique constraint): a second count of the same shelf on the same day is
-- refused whatever its key.
CREATE TABLE shop_stock_counts (
    id         text        PRIMARY KEY,
    tenant_id  text        NOT NULL,
    location   text        NOT NULL,
    sku        text        NOT NULL,
    day        date        NOT NULL,
    quantity   bigint      NOT NULL,
    counted_by text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT shop_stock_counts_quantity_not_negative CHECK (quantity >= 0),
    CONSTRAINT shop_stock_count_once_per_day UNIQUE (tenant_id, location, sku, day)
);

-- Orders, with the price the client submitted and the price list's at submission. An order
-- whose prices differ is held for review, never repriced.
CREATE TABLE shop_orders (
    id            text        PRIMARY KEY,
    tenant_id     text        NOT NULL,
    sku           text        NOT NULL,
    quantity      bigint      NOT NULL,
    unit_price    bigint      NOT NULL,
    current_price bigint      NOT NULL,
    phone         text        NOT NULL,
    status        text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    shipped_at    timestamptz,
    CONSTRAINT shop_orders_quantity_positive CHECK (quantity > 0),
    CONSTRAINT shop_orders_status_valid CHECK (status IN ('accepted', 'held', 'shipped')),
    CONSTRAINT shop_orders_held_when_repriced CHECK ((status = 'held') = (unit_price <> current_price)),
    CONSTRAINT shop_orders_shipped_at CHECK ((status = 'shipped') = (shipped_at IS NOT NULL))
);

-- Shipments: what the customer was texted and the partner was told, one per order.
CREATE TABLE shop_shipments (
    order_id       text        PRIMARY KEY REFERENCES shop_orders (id),
    tenant_id      text        NOT NULL,
    message_id     text        NOT NULL,
    message_status text        NOT NULL,
    delivery_id    text        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
