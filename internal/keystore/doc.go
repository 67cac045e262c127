// Package keystore owns every statement on the key tables: pgsaga_key, pgsaga_call (and the
// journal view over both, pgsaga_call_journal), pgsaga_key_action and pgsaga_key_tombstone.
// Each statement is written whole, with named parameters, in one .sql file per state change or
// concern under queries/:
//
//	read.sql       a key's head (the request path's read), the whole key, its writer
//	claim.sql      the claims: a key's first write, in the state its first phase left it in
//	advance.sql    a phase's commit: the next recovery point, a renewed lease, the next call
//	complete.sql   started → completed, with the response
//	release.sql    the lease given back after a transient failure, the next attempt scheduled
//	park.sql       started → failed (parked for an operator)
//	renew.sql      a call's heartbeat; a duplicate's wait for the key's execution
//	take_over.sql  a takeover of a key whose lease expired (a retry, an operator's resume)
//	due.sql        the worker's claims of due keys and its sweep's reservations
//	settle.sql     an operator's settlement of a parked key
//	list.sql       the operators' listing, a key's journal and history, the call references
//	count.sql      counts and estimates by state
//	retention.sql  retention GC's batches (by expiry, by age), tombstones and their expiry
//
// sqlc v1.31.1 generates the typed XxxParams and XxxRow structs and a method per statement
// (the *.sql.go files, models.go, db.go) from these files and the migrations: `make generate`.
// The generated code is checked in; TestGeneratedCodeIsFresh fails when it is stale, by
// comparing the hashes in generated.sum with the files, without building sqlc.
//
// The rules that decide which keys an execution may take (the expired lease, the due key, the
// stuck key, the attempt budget) are SQL functions of migration 012, each written once and
// called by every statement that needs it; PostgreSQL inlines them.
//
// # Sending without allocating
//
// The generated methods box every parameter and every scan target in an interface: on the
// request path's read of a key (ReadHead), 16 allocations instead of the 10 of the same
// statement sent with its arguments in pooled pgtype values, and 27 with pgx.NamedArgs over the
// same statement (BenchmarkReadHead). The request path's budgets (saga's allocation test) leave
// no room for either, so the request path's statements (requestpath.go) are bound into a
// Statement instead: the same SQL, the generated Params struct's fields in their order, copied
// into pooled pgtype values that pgx encodes without boxing. Every other statement (takeovers,
// the worker's claims, heartbeats, operators' reads) runs through its generated method.
//
// Fencing: every write of an execution that holds a key names the key's lease token and
// status = 'started', and selects pgsaga_lease_lost() when it wrote no row, which raises
// SQLSTATE PGS01: the statement writes nothing, and a COMMIT queued after it never runs. Leases
// are written with clock_timestamp(), the moment of the write, never now(), the transaction's
// start: a phase that waited on a lock must not commit a lease already nearly spent.
//
// Two sqlc limits shape the .sql files: an UPDATE's target table is aliased wherever a later
// CTE of the statement updates another table (sqlc resolves their columns together and calls
// them ambiguous), and a parameter multiplied by an interval is written sqlc.arg(name) (sqlc
// cannot rewrite @name there). No statement is built at run time.
package keystore
