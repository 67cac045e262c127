DROP TABLE IF EXISTS pgsaga_key;
DROP FUNCTION IF EXISTS pgsaga_lease_lost(text);
