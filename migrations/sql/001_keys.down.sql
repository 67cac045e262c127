DROP TABLE IF EXISTS pgsaga_key;
DROP FUNCTION IF EXISTS pgsaga_lease_lost(text);
DROP FUNCTION IF EXISTS pgsaga_key_notify_done();
