// Package worker runs pgsaga's background work on River (riverqueue/river): resuming keys whose
// process died, delivering outbox events, and deleting expired keys. River is never on the
// request path: requests only ever insert outbox jobs in their own transaction.
//
// # Wiring
//
// A process that serves requests and runs a worker builds its parts in this order, each from
// the ones before it: the pool; the migrations (pgsaga's and River's tables, then its own); the
// outbox, which needs no pool and no worker; the operations, whose phases emit through the
// outbox; the saga client, built from the operations; the worker, built from the client; the
// HTTP server, whose handlers run the client's operations. Example (Wiring) is such a main in
// full.
//
//	pool, err := pgxpool.New(ctx, databaseURL)
//	_, err = migrations.Migrate(ctx, pool, &migrations.MigrateOpts{Lines: myLines})
//	outbox, err := worker.NewOutbox()
//	ops := myOperations(outbox) // phases call outbox.EmitTx(ctx, tx, event)
//	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: ops})
//	w, err := worker.New(&worker.Config{Pool: pool, Client: client})
//	err = w.Start(context.WithoutCancel(ctx))
//	handler, err := client.Handler("my_operation", &saga.HandlerOpts{Scope: authenticate})
//
// It stops them the other way round: the HTTP server (Shutdown lets the requests under way
// finish), then the worker (Stop lets running resumes finish and leaves queued jobs to the
// other workers), then the pool. A process that only serves requests builds the same parts but
// the worker: the worker processes deliver its events, whichever process inserted them.
//
// # Design
//
// Every worker process sweeps on its own, every SweepInterval (default 1s): it reserves due keys
// — started, lease expired, next_attempt_at passed, of an operation this worker knows — for one
// lease, and in the same transaction enqueues them, ResumeBatchSize keys to a resume job. Later
// sweeps, in this process or another, do not list a reserved key again; if a key's job is lost
// the key falls due again when the reservation ends. Resume jobs spread over every worker
// process; each takes the leases of its keys that are still due in one statement (saga's
// ResumeDue: a fresh lease token per key, one attempt counted, only if the key is still started
// and its lease free, and the journal row of the call a key goes on with), then resumes them all
// at once, each through its remaining phases.
//
// Sweeps take turns, whichever process runs them: a sweep takes a transaction's advisory lock,
// and one that finds it taken skips its turn. Two at once would make resume jobs pass over keys
// (a sweep's reservation locks rows a concurrent sweep has just reserved, and the jobs' claims
// skip locked rows), and those keys would wait a lease.
//
// The sweep is not a River periodic job, because River runs those on its elected leader only,
// and a leader killed outright still leads until its row in river_leader expires (River holds
// it for 15s; a follower tries to take it every 5s); its last sweep job, left running, also
// holds the sweep's unique slot until River's rescuer gives up on it (a minute and a lease).
// With a 3s lease and a 200ms sweep, the leader killed (kill -9) while it resumed a key, another
// worker finished that key 17-19s after the kill, or 77-80s when the dead leader's sweep job was
// caught running; with a sweep in every process, 3.0-3.1s (TestKilledLeaderKeyFinishedOnTime).
// A sweep that finds nothing is one short transaction per worker per SweepInterval.
//
// We chose jobs over running the batch resumer (resumer.runOnce, which claims due keys one at a
// time with no job queue) inside the sweep because jobs spread the resumes over all workers,
// whichever swept, make them visible and retried in River, and let a stopping worker leave
// queued work to the others. River's
// bookkeeping per job (an insert, a fetch and a completion on river_job) costs about as much CPU
// as resuming a key: on this 2-core machine River alone works 2,600 to 6,100 no-op jobs a
// second. So a job carries a batch of keys and claims them in one statement: one job per key
// gave about 900 keys/s with one worker and 1,100 with two (measured on a busy machine), batches
// of 8 about 1,800 and 2,200 in the same conditions (BenchmarkWorkerResume). FetchCooldown and
// MaxWorkers moved nothing measurable once the keys came in batches.
//
// Retention GC and reconciliation are River periodic jobs, run by the leader: nothing waits on
// them, and after the leader's death they go on once River has elected another.
//
// # Guarantees
//
//   - No key is resumed twice at once: the claim succeeds for one caller only (it needs an
//     expired lease and writes a new one), and saga fences every phase with the lease token, so
//     even a resumer paused past its lease commits nothing. A key is in one job at a time while
//     its reservation holds; should two jobs hold it (one outlived the reservation), the first
//     to claim it resumes it and the other skips it.
//   - Retry: a resume that fails transiently completes its job; saga has already scheduled the
//     key's next attempt in SQL (next_attempt_at) and a later sweep enqueues it again. A key whose
//     attempts reach the operation's MaxAttempts is parked as failed by saga and never swept
//     again (an operator resumes it). A job errors, and River retries it, only when the claim
//     could not reach the database.
//   - Crash (kill -9) of any process, a serving process or a worker (River's leader included):
//     a key it held is finished within its lease plus two sweep intervals and the time its
//     remaining steps take. The lease runs out, the next sweep of any live worker enqueues the
//     key, and a worker fetches the job at once (River hears of the insert, and looks every
//     50ms anyway). A worker killed in the middle of a resume leaves its job "running" in River
//     until River's rescuer retries it (after a minute plus the lease, checked every 30s), but
//     its keys do not wait for that: their leases and reservations run out after a lease and a
//     sweep enqueues them in a new job; the rescued job finds them done and skips them. Queued
//     jobs stay queued for any worker.
//   - Stop: Stop stops the sweep and fetching, lets running jobs finish (a resume is detached from cancellation,
//     so it is never cut between a call and the phase that records it) and leaves queued jobs in
//     the database; nothing is lost. Keys are never claimed ahead of their job, so there is
//     nothing to give back.
//   - Database outages, start included: Start tries to start River once. If the database cannot
//     be reached (down, restarting, out of connections, a standby refusing writes with SQLSTATE
//     25006 while a replicated pair fails over), Start returns nil and the worker keeps trying
//     in the background — a ping, then River's start — with backoff from 250ms doubling to 5s,
//     logging each failure ("worker start failed, retrying"), for as long as it takes, until it
//     starts, Start's context ends or Stop is called. Start returns an error only when the
//     database answered and refused (River's tables missing: not migrated; a privilege
//     missing), which retrying would not change. A user embedding the worker thus never has to
//     restart their process, or write a retry loop, because the database was away when it
//     started. Once started, River rides out outages itself (River v0.51): its producers log
//     each failed fetch and keep polling, the notifier reconnects with backoff, the elector
//     keeps trying to elect (a leader whose maintenance services cannot start resigns and the
//     election starts over), and the completer keeps the completions it could not write for
//     its next batch; River never stops the client on its own. Jobs that an outage interrupts
//     fail and are retried (see Retry).
//   - Outbox: Outbox.EmitTx inserts the event's delivery job in the caller's transaction
//     (River's InsertTx): it exists exactly when that transaction commits. Delivery is at least once — a
//     POST that gets no 2xx is retried by River with backoff — so receivers de-duplicate by the
//     X-Event-ID header with saga.RecordInboxTx.
//   - Behind a pooler in transaction pooling mode (PgBouncer), Config.PollOnly runs River
//     without LISTEN; Start refuses a Pool whose LISTEN hears nothing when it is not set.
//   - Retention: the periodic GC deletes completed keys past their expiry (or Config.Retention),
//     in batches that skip locked rows, and never a started or failed key.
//   - Reconciliation (with Config.Lister): a periodic job (one at a time) lists the
//     provider's charges of the last ReconcileWindow and stores in pgsaga_unmatched_charge each
//     one no key accounts for (package reconcile), which the console lists. It writes no key and
//     sends nothing to the provider; a run that fails is counted and the next one looks again
//     (the window is longer than the interval, so every charge is looked at by several runs).
package worker
