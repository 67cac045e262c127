-- Events already applied, by their producer's id: the consumer side of exactly-once.
CREATE TABLE pgsaga_inbox (
    source      text        NOT NULL,
    event_id    text        NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT pgsaga_inbox_pkey PRIMARY KEY (source, event_id),
    CONSTRAINT pgsaga_inbox_source_present CHECK (length(source) BETWEEN 1 AND 255),
    CONSTRAINT pgsaga_inbox_event_id_present CHECK (length(event_id) BETWEEN 1 AND 255)
);

CREATE INDEX pgsaga_inbox_received_idx ON pgsaga_inbox (received_at);
