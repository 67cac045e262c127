DROP TABLE IF EXISTS pgsaga_operator;
DROP TABLE IF EXISTS pgsaga_api_key;
