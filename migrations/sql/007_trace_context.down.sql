ALTER TABLE pgsaga_key DROP COLUMN trace_context;
