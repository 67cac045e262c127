-- The rules that decide which keys an execution may take, each written once and called by every
-- statement that needs it. Plain SQL functions, declared VOLATILE like the clock they read: the
-- planner inlines them into each statement, so a call costs what the expression it stands for
-- costs, and an index still serves the conditions around it.

-- A key's lease has expired (or was never taken): another execution may take the key over.
CREATE FUNCTION pgsaga_lease_expired(locked_until timestamptz) RETURNS boolean
LANGUAGE sql VOLATILE
RETURN locked_until IS NULL OR locked_until <= clock_timestamp();

-- A started key is due for an execution: its lease has expired and its next attempt time has
-- passed. (The caller checks that the key is started: how it says so decides the index.)
CREATE FUNCTION pgsaga_key_due(locked_until timestamptz, next_attempt_at timestamptz) RETURNS boolean
LANGUAGE sql VOLATILE
RETURN pgsaga_lease_expired(locked_until) AND next_attempt_at <= clock_timestamp();

-- A key needs an operator's attention: parked, or started with an expired lease (its process
-- died and no one resumed it yet).
CREATE FUNCTION pgsaga_key_stuck(status text, locked_until timestamptz) RETURNS boolean
LANGUAGE sql VOLATILE
RETURN status = 'failed' OR (status = 'started' AND pgsaga_lease_expired(locked_until));

-- An execution that takes a key at its attempt `attempts` is within the operation's budget: no
-- more attempts counted against it (those that were not, attempts_unspent, are free) than
-- max_attempts, and the key no older than max_age_ms. Outside it the execution parks the key
-- at once and sends no call.
CREATE FUNCTION pgsaga_budget_left(attempts integer, attempts_unspent integer, created_at timestamptz,
    max_attempts integer, max_age_ms bigint) RETURNS boolean
LANGUAGE sql VOLATILE
RETURN attempts - attempts_unspent <= max_attempts
    AND clock_timestamp() - created_at <= max_age_ms * interval '1 millisecond';
