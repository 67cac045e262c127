DROP FUNCTION pgsaga_budget_left(integer, integer, timestamptz, integer, bigint);
DROP FUNCTION pgsaga_key_stuck(text, timestamptz);
DROP FUNCTION pgsaga_key_due(timestamptz, timestamptz);
DROP FUNCTION pgsaga_lease_expired(timestamptz);
