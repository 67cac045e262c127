// Package worker runs pgsaga's background work on River (riverqueue/river): resuming keys whose
// process died, delivering outbox events, and deleting expired keys. River is never on the
// request path: requests only ever insert outbox jobs in their own transaction.
//
// # Design
//
// A periodic sweep job (every SweepInterval, default 1s, enqueued by whichever worker River
// elects leader) reserves due keys — started, lease expired, next_attempt_at passed, of an
// operation this worker knows — and, in the same transaction, enqueues one resume job per key,
// unique per key among unfinished jobs. The reservation moves the key's next_attempt_at one
// lease ahead, so later sweeps do not list it again while its job waits; if the job is lost the
// key falls due again. Resume jobs spread over every worker process; each takes its key's lease
// with a conditional UPDATE (package recovery: a fresh lease token, one attempt counted, only if
// the key is still started and its lease free) and falls through the remaining phases.
//
// We chose jobs over running the batch resumer (recovery.Resumer.RunOnce) inside the sweep
// because River runs periodic jobs on the leader only: jobs spread the resumes over all
// workers, make each key's resume visible and retried in River, and let a stopping worker leave
// queued work to the others. The price is River's bookkeeping per key (an insert, a fetch and a
// completion on river_job): on a 2-core machine running PostgreSQL too, about 1,700 keys/s per
// worker against about 4,300 for RunOnce's batch claims. RunOnce remains available for callers
// without River.
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
//   - Crash (kill -9) of a serving process: its key's lease expires and the next sweep enqueues
//     the key. Crash of a worker in the middle of a resume: the job stays "running" in River and
//     keeps the key's unique slot until River's rescuer retries it (after a minute plus the
//     lease, checked every 30s), which then takes the expired lease and resumes the key — so
//     such a key waits about two minutes with the default 30s lease. Queued jobs stay queued for
//     any worker.
//   - Stop: Stop stops fetching, lets running jobs finish (a resume is detached from cancellation,
//     so it is never cut between a call and the phase that records it) and leaves queued jobs in
//     the database; nothing is lost. Keys are never claimed ahead of their job, so there is
//     nothing to give back.
//   - Outbox: EmitTx inserts the event's delivery job in the caller's transaction (River's
//     InsertTx): it exists exactly when that transaction commits. Delivery is at least once — a
//     POST that gets no 2xx is retried by River with backoff — so receivers de-duplicate by the
//     X-Event-ID header with saga.RecordInboxTx.
//   - Retention: the periodic GC deletes completed keys past their expiry (or Config.Retention),
//     in batches that skip locked rows, and never a started or failed key.
package worker
