ALTER TABLE pgsaga_call DROP COLUMN max_in_flight_ms;
