DROP FUNCTION IF EXISTS pgsaga_key_unexpired(text, text, text);
DROP FUNCTION IF EXISTS pgsaga_request_digest(text, text, bytea);
DROP FUNCTION IF EXISTS pgsaga_key_hash(text);
DROP TABLE IF EXISTS pgsaga_key_tombstone;
DROP INDEX IF EXISTS pgsaga_key_expires_idx;
