ALTER TABLE payments DROP CONSTRAINT payments_settled_has_charge;
ALTER TABLE payments ADD CONSTRAINT payments_settled_has_charge CHECK (status = 'pending' OR charge_id IS NOT NULL);
ALTER TABLE payments DROP CONSTRAINT payments_status_valid;
ALTER TABLE payments ADD CONSTRAINT payments_status_valid CHECK (status IN ('pending', 'succeeded', 'declined'));
