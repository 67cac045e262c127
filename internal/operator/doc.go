// Package operator keeps the console's operators (`pgsaga operator`): each has a name, which
// the keys' history records for what they do, and a token they sign in with.
//
// What it guarantees:
//   - A token is shown once, when its operator is added, and never stored: the table keeps its
//     SHA-256 digest (a token carries 256 random bits, so a digest is as good as a slow hash).
//     A sign-in finds its operator by that digest and compares it again in constant time.
//   - A name is taken for good: a revoked operator's name cannot be given to someone else, so a
//     key's history never names two people.
//   - Revoke takes effect at once: the console checks the operator on every request of a
//     session, so their sessions end with the commit.
//
// All SQL on pgsaga_operator is in sql.go.
package operator
