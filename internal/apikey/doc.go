// Package apikey keeps the API keys of a service (`pgsaga apikey`) and authenticates requests by
// them: a key names the (tenant, actor) scope of every request that presents it as
// "Authorization: Bearer <secret>".
//
// What it guarantees:
//   - A secret is shown once, when it is created, and never stored: the table keeps its SHA-256
//     digest (the secret carries 256 random bits, so a digest is as good as a slow hash and costs
//     nothing per request). Presented secrets are compared with the digest in constant time.
//   - A secret names its key: pgs_<id>_<random>. The id is public (listed, used to revoke); a
//     malformed secret is refused without reading the database.
//   - Every request reads its key from the database (one primary-key lookup, no cache): a revoke
//     takes effect for the next request in every process at once.
//   - A database that cannot be reached is not a wrong key: Scope answers it with a
//     *saga.TransientError (503 temporarily_unavailable with Retry-After), so a client retries
//     instead of giving up on a 401.
//
// All SQL on pgsaga_api_key is in sql.go.
package apikey
