// Package worker runs pgsaga's background work on River (riverqueue/river): resuming keys whose
// process died, delivering outbox events, and deleting expired keys. River is never on the
// request path: requests only ever insert outbox jobs in their own transaction.
//
// # Design
//
// A periodic sweep job (every SweepInterval, default 1s, run by whichever worker River elects
// leader) lists due keys — started, lease expired, next_attempt_at passed, of an operation this
// worker knows — and enqueues one resume job per key, unique per key among unfinished jobs. Resume
// jobs spread over every worker process; each claims its key with the resumer's conditional
// UPDATE (package recovery: a fresh lease token, one attempt counted, and only if the key is
// still due) and falls through the remaining phases. We chose jobs over running the batch
// resumer inside the sweep so that the work spreads across all workers (River runs periodic jobs
// on the leader only), each key's resume is visible and retried in River, and a stopping worker
// leaves queued jobs for the others.
//
// # Guarantees
//
//   - No key is resumed twice at once: River's uniqueness keeps one unfinished job per key, the
//     claim succeeds for one caller only (it needs an expired lease and writes a new one), and
//     saga fences every phase with the lease token, so even a resumer paused past its lease
//     commits nothing.
//   - Retry: a resume that fails transiently completes its job; saga has already scheduled the
//     key's next attempt in SQL (next_attempt_at) and a later sweep enqueues it again. A key whose
//     attempts reach the operation's MaxAttempts is parked as failed by saga and never swept
//     again (an operator resumes it). A job errors, and River retries it, only when the claim
//     could not reach the database.
//   - Crash (kill -9): a running resume job leaves its key started with a lease that expires; the
//     next sweep after that enqueues it again (River's rescuer also retries the job itself). A
//     queued job stays queued for any worker.
//   - Stop: Stop stops fetching, lets running jobs finish (a resume is detached from cancellation,
//     so it is never cut between a call and the phase that records it) and leaves queued jobs in
//     the database; nothing is lost.
//   - Outbox: EmitTx inserts the event's delivery job in the caller's transaction (River's
//     InsertTx): it exists exactly when that transaction commits. Delivery is at least once — a
//     POST that gets no 2xx is retried by River with backoff — so receivers de-duplicate by the
//     X-Event-ID header with saga.RecordInboxTx.
//   - Retention: the periodic GC deletes completed keys past their expiry (or Config.Retention),
//     in batches that skip locked rows, and never a started or failed key.
package worker
