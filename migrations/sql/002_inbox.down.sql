DROP TABLE IF EXISTS pgsaga_inbox;
