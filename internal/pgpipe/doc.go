// Package pgpipe is a lazy transaction: a pgx.Tx on a pooled connection whose transaction
// control travels with the statements around it instead of costing round trips of its own.
//
// A transaction of a phase costs, with pgx's own Tx, BEGIN + the phase's statements + the
// engine's key write + COMMIT: two round trips more than the statements. With a Tx from Begin:
//
//   - BEGIN is not sent by Begin. It is pipelined in front of the first statement the phase
//     sends (Exec, Query, QueryRow, SendBatch). CopyFrom, LargeObjects and Prepare send it (and
//     any pending savepoint statements) in a round trip of their own first.
//   - CommitWith pipelines the engine's final statements with COMMIT: one round trip. When the
//     phase sent no statement at all, there is no BEGIN and no COMMIT: the final statements go
//     as one pipeline, which PostgreSQL runs as one implicit transaction
//     (atomic: all of them or none), in one round trip.
//   - Savepoints (Begin on a Tx) are deferred the same way: SAVEPOINT, RELEASE SAVEPOINT and
//     ROLLBACK TO SAVEPOINT ride with the next statement or with COMMIT. A Commit or Rollback of
//     a Tx that never sent a statement sends nothing.
//
// Guarantees:
//   - PostgreSQL skips the rest of a pipeline after an error, so a final statement that raises
//     keeps the COMMIT queued after it from running: nothing of the transaction commits. A
//     statement that merely returns no rows is not an error: a write that must stop the commit
//     has to raise (for example `SELECT 1 / count(*) FROM written`). Checking a row count in Go
//     cannot stop a COMMIT already pipelined behind it.
//   - An error in the first round trip (BEGIN, the phase's statement) is returned by the call
//     that sent it. The transaction is then in PostgreSQL's aborted
//     state, as with pgx's Tx; Rollback ends it. When nothing reached the server (pgx refused
//     the batch before sending it, or a statement failed to prepare), BEGIN is still pending and
//     the transaction can go on.
//   - Rows (and batch results) left open are closed, reading what is left, by the next call on
//     the Tx: pgx's Tx would answer "conn busy" and lose the connection at Commit.
//   - The connection goes back to the pool when the Tx ends (Commit, CommitWith, Rollback), idle
//     (transaction status 'I'), so the pool keeps it. One it cannot clean (a cancelled context
//     closes pgx's connection mid-query) is closed, and the pool replaces it. A transaction that
//     was open on it is then rolled back by the server when the session ends.
package pgpipe
