package apikey

// Every statement on pgsaga_api_key (migration 006_auth), with named arguments.

// insertKeySQL stores a new key.
const insertKeySQL = `INSERT INTO pgsaga_api_key (id, tenant_id, actor_id, secret_hash)
VALUES (@id, @tenant, @actor, @secret_hash)
RETURNING created_at`

// listKeysSQL lists keys newest first, of one tenant when @tenant is not empty.
const listKeysSQL = `SELECT id, tenant_id, actor_id, created_at, revoked_at FROM pgsaga_api_key
WHERE (@tenant::text = '' OR tenant_id = @tenant)
ORDER BY created_at DESC, id DESC`

// revokeKeySQL revokes a key; revoking it again keeps the first time.
const revokeKeySQL = `UPDATE pgsaga_api_key SET revoked_at = coalesce(revoked_at, clock_timestamp())
WHERE id = @id
RETURNING id, tenant_id, actor_id, created_at, revoked_at`

// verifyKeySQL reads what authenticating a request needs of a key that is not revoked.
const verifyKeySQL = `SELECT tenant_id, actor_id, secret_hash FROM pgsaga_api_key
WHERE id = @id AND revoked_at IS NULL`
