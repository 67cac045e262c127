ALTER TABLE pgsaga_call DROP CONSTRAINT pgsaga_call_outcome;
ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_state_machine;
DROP FUNCTION pgsaga_call_outcome_valid(text);
DROP FUNCTION pgsaga_key_valid(text, integer, uuid, integer, bytea, timestamptz, timestamptz, text, text);
