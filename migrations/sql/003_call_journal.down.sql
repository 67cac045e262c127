DROP TABLE pgsaga_key_action;
DROP TABLE pgsaga_call;
ALTER TABLE pgsaga_key DROP COLUMN reserved_until;
ALTER TABLE pgsaga_key DROP COLUMN attempts_unspent;
ALTER TABLE pgsaga_key DROP COLUMN parked_reason;
