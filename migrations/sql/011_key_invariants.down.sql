ALTER TABLE pgsaga_call DROP CONSTRAINT pgsaga_call_outcome;
ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_call_outcome;
ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_state_machine;
