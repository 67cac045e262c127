// Package saga is pgsaga's engine: it gives operations exactly-once effects over at-least-once
// networks, on PostgreSQL.
//
// A client sends one idempotency key per user intent. The engine claims the key in the
// pgsaga_key table, scoped to (tenant, actor), and runs the operation declared with package
// phases. What each situation gets:
//
//   - Retry of a completed key (a lost response, a double click): the stored response, byte for
//     byte, marked Replayed. Nothing runs again.
//   - The same key with another method, path or body: ErrKeyReused; nothing is stored.
//   - The same key while an execution holds its lease: an *InProgressError with the time left.
//   - A crash (or kill -9) in the middle: every atomic phase either committed with the key's
//     recovery point or left nothing. A single-transaction operation leaves no key at all, so
//     the retry starts fresh. A phased operation leaves a started key whose lease expires; the
//     next retry, the worker (package recovery) or an operator takes the lease over and falls
//     through the remaining phases. External calls after the recovery point are resolved, not
//     repeated blindly: the operation re-sends its derived downstream key, and asks the provider
//     first when Run.Resumed says an earlier attempt may have reached it.
//   - A zombie (a process paused past its lease whose key was taken over): its next phase finds
//     the fencing token changed and commits nothing (ErrLeaseLost).
//   - A deterministic business outcome (phases.Reject): stored and replayed like a success.
//   - A transient failure (gateway or database unavailable): a *TransientError; nothing is
//     stored, the lease is released early and the next attempt is scheduled in SQL. After
//     MaxAttempts the key is parked (ErrParked) until an operator resumes it.
//   - Cancellation: an execution is detached from its caller's context, so a client hanging up
//     never cuts an operation between a call and the phase that records it; phases and calls
//     have their own deadlines, calls shorter than the lease.
//
// Single-transaction operations (one atomic phase) cost one statement beyond the business
// transaction: the claim is an INSERT … ON CONFLICT DO NOTHING of the completed key, in the same
// transaction as the effect, so a concurrent duplicate waits on the unique index and then
// replays. Phased operations cost one statement per atomic phase: the first phase's INSERT claims
// the key, later ones advance it with an UPDATE fenced by the lease token.
package saga
