package operator

// Every statement on pgsaga_operator (migration 006_auth), with named arguments.

// insertOperatorSQL adds an operator; a name already taken inserts nothing.
const insertOperatorSQL = `INSERT INTO pgsaga_operator (name, token_hash)
VALUES (@name, @token_hash)
ON CONFLICT (name) DO NOTHING
RETURNING created_at`

// listOperatorsSQL lists the operators by name.
const listOperatorsSQL = `SELECT name, created_at, revoked_at FROM pgsaga_operator ORDER BY name`

// revokeOperatorSQL revokes an operator; revoking again keeps the first time.
const revokeOperatorSQL = `UPDATE pgsaga_operator SET revoked_at = coalesce(revoked_at, clock_timestamp())
WHERE name = @name
RETURNING name, created_at, revoked_at`

// findByTokenSQL finds the operator a token digest belongs to, unless revoked.
const findByTokenSQL = `SELECT name, token_hash FROM pgsaga_operator
WHERE token_hash = @token_hash AND revoked_at IS NULL`

// activeSQL tells whether an operator exists and is not revoked.
const activeSQL = `SELECT EXISTS (SELECT FROM pgsaga_operator WHERE name = @name AND revoked_at IS NULL)`

// countActiveSQL counts the operators not revoked.
const countActiveSQL = `SELECT count(*) FROM pgsaga_operator WHERE revoked_at IS NULL`
