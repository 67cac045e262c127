-- A payment an operator settled as failed (pgsaga settle --outcome failed): no charge, and its
-- reservation given back.
ALTER TABLE payments DROP CONSTRAINT payments_status_valid;
ALTER TABLE payments ADD CONSTRAINT payments_status_valid
    CHECK (status IN ('pending', 'succeeded', 'declined', 'failed'));
ALTER TABLE payments DROP CONSTRAINT payments_settled_has_charge;
ALTER TABLE payments ADD CONSTRAINT payments_settled_has_charge
    CHECK (status IN ('pending', 'failed') OR charge_id IS NOT NULL);
