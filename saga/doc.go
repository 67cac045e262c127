// Package saga is pgsaga's engine: it gives operations exactly-once effects over at-least-once
// networks, on PostgreSQL.
//
// A client sends one idempotency key per user intent. The engine claims the key in the
// pgsaga_key table, scoped to (tenant, actor), and runs the operation declared with package
// phases. What each situation gets:
//
//   - Retry of a completed key (a lost response, a double click): the stored response, byte for
//     byte, marked Replayed. Nothing runs again. A request that itself held the key (the first
//     one, or a retry that took it over) is never answered as a replay.
//   - The same key with another method, path or body (numbers compared exactly): ErrKeyReused;
//     nothing is stored.
//   - The same key while an execution holds its lease: an *InProgressError with the lease left
//     and an estimate of what is left of the execution (its RetryAfter), or, for an operation
//     with WaitInFlight, a bounded wait for the stored response that holds no pooled connection
//     and ends at the caller's deadline.
//   - A crash (or kill -9) in the middle: every atomic phase either committed with the key's
//     recovery point or left nothing. A single-transaction operation leaves no key at all, so
//     the retry starts fresh. A phased operation leaves a started key whose lease expires; the
//     next retry, the worker (package worker) or an operator takes the lease
//     over and falls through the remaining phases.
//   - External calls: each attempt is journaled in the same fenced write that renews the lease
//     (the call a key's claim journals in the key row itself, every other attempt in
//     pgsaga_call; pgsaga_call_journal is both), before it is sent, and its outcome class is
//     recorded after. A call runs
//     only under a lease that covers it — leases are measured from the moment they are written,
//     the call is cut a quarter of a lease before its lease ends, and heartbeats keep a long call
//     leased — so one key's call never runs twice at once. On resume the call learns from the
//     journal (phases.Run.PriorCalls) whether an earlier attempt may have reached the provider;
//     gateway.Execute resolves it (same downstream key, or inquiry once the provider's in-flight
//     window has passed) before anything is sent again.
//   - A zombie (a process paused past its lease whose key was taken over): its writes find the
//     fencing token changed and commit nothing; its call is cut by its deadline.
//   - A deterministic business outcome (phases.Reject): stored and replayed like a success,
//     after the compensations of the phases before it, each committed exactly once.
//   - Data the database refuses (a string with NUL, a CHECK): *InvalidRequestError (400),
//     nothing stored before any phase committed, stored like a rejection after. A unique or
//     exclusion constraint of business SQL that refuses the effect: 409 conflict, stored. The
//     whole SQLSTATE table is in refusal.go.
//   - A transient failure (gateway or database unavailable, a pending call): a *TransientError
//     with the time to the next attempt; nothing is stored, the lease is released early and the
//     next attempt is scheduled in SQL. A retry before then gets the same answer and spends
//     nothing. Attempts are spent by scheduled executions only (the claim counts them, so a key
//     whose executions kill their process parks too); after MaxAttempts, or MaxAge, the key is
//     parked (*ParkedError, attempts_exhausted).
//   - An outcome nothing can resolve (phases.OutcomeUnknown: no inquiry and no keys, a key past
//     the provider's window): parked at once (outcome_unknown), compensating nothing, for an
//     operator to settle (Client.Settle) after looking at the provider.
//   - Cancellation: an execution is detached from its caller's context, so a client hanging up
//     never cuts an operation between a call and the phase that records it; phases and calls
//     have their own deadlines.
//
// Operators read keys through KeyGet and KeyList (keyset pagination), and act with Resume and
// Settle, which record who did what in the key's history; KeyDeleteExpired is retention GC.
// Package sagatest lets users check their own operations against crashes at every point.
//
// Tracing. With Config.TracerProvider set, every request that reaches the engine (Run, RunTx) is
// a pgsaga.request span, a child of the caller's (the HTTP server's: wrap the handler with
// otelhttp to honour an incoming traceparent), with one pgsaga.phase span per atomic phase
// (pgsaga.recovery_point), one pgsaga.call span per external call attempt (pgsaga.attempt,
// pgsaga.call.outcome, pgsaga.call.reference, pgsaga.call.provider_id) and one
// pgsaga.compensate span per compensation; the request's span names the key (pgsaga.operation,
// pgsaga.tenant, pgsaga.actor, pgsaga.key) and how it was answered (pgsaga.outcome). A key stores the
// W3C traceparent of the request that claimed it, written by the claim itself: a later
// execution of the key is a pgsaga.resume span (pgsaga.resumed_by: retry, worker or operator)
// that is a child of that request when no client waits for it (the worker's, an operator's),
// linked to the span it runs under (a River job's), and a child of the retry's request, linked
// to the first one, for a retry; an operator's settlement is a pgsaga.settle span, likewise a
// child of the first request. So one trace holds a payment's story across a crash. Parking (the
// reason), a scheduled retry and a takeover are events on the execution's span; a parked or
// failed execution's span has status Error and error.type. A process that dies mid-request never
// ends its spans: the trace keeps what it exported before. Without a TracerProvider the engine
// makes no span, stores no trace context and allocates nothing for tracing.
//
// Costs. The round trips of a request depend on the request alone. A new key's first atomic phase
// runs at once; right before its first statement the key is read on the phase's own connection,
// and a retry of any kind (replay, 422, 409, parked, not due) is answered from that read, with
// nothing of the phase sent: one round trip, no transaction. (The phase's code runs up to its
// first statement: as always, a phase has no effect outside its transaction.) A phase runs in a
// lazy transaction whose BEGIN travels with its first statement and whose COMMIT travels with the
// key's write, so a phase costs its own statements plus one round trip, and a phase that sends
// no statement costs the key's write alone: a new key whose first phase sends none is claimed
// by that write without being read (a retry's claim finds it stored, and reads it: two round
// trips). A single-transaction operation (one atomic phase) costs the read, then its statements,
// then the claim (the INSERT of the completed key, in the same transaction as the effect, sent
// with its COMMIT, so a concurrent duplicate waits on the unique index and then replays): three
// round trips for a one-statement phase. Phased operations cost one statement per atomic phase
// (the claim, then fenced advances), carrying the call journal's rows; one that begins with a
// call reads the key first. A takeover whose recovery point comes right before a call journals
// that call itself.
//
// Behind a pooler in transaction pooling mode (PgBouncer's pool_mode=transaction), set
// Config.TransactionPooling and give DB's pool pgx's cache_describe mode: no statement then
// depends on the server session of an earlier transaction. The bounded wait for a request in
// flight listens on Config.ListenDB (a direct connection) or polls the key; CheckListen, called
// at start, refuses a LISTEN that would hear nothing.
//
// # Files
//
// A request reads top to bottom through:
//
//   - http.go: the net/http handler (Idempotency-Key, body limits, errors); request.go and
//     keyformat.go: a Request and its checks; fingerprint.go: the body's fingerprint.
//   - run.go: Run, the first round trip, and what an existing key means (replay, 422, 409 or a
//     wait, parked, not due, takeover).
//   - execution.go: an execution's stage and runner, the step loop, its writes, transient
//     failures and parking; phase.go and phasetx.go: an atomic phase and its lazy transaction;
//     call.go: an external call under its lease, journal and heartbeats.
//   - Off the request path: compensate.go: compensations; runtx.go: RunTx inside the caller's
//     transaction.
//   - resume.go: resuming a key (Resume, the worker's ResumeDue/ResumeNextDue); settle.go: an
//     operator's settlement; wait.go and listener.go: the bounded wait for an execution in
//     flight; estimate.go: a 409's Retry-After; refusal.go: the database's refusals that are
//     answers.
//
// The key store: every statement on pgsaga_key, pgsaga_call and pgsaga_key_action is whole in a
// .sql file of internal/keystore, typed by sqlc. Here, the glue that converts saga's types:
// store_key.go (a key write bound to its statement, and sent), store_head.go (reads of one key),
// store_lease.go (takeovers, heartbeats, the worker's claims), store_read.go and store_action.go
// (the operators' reads and settlements), callread.go (which keys journaled calls under given
// references, for reconciliation); retention.go (the retention GC and its tombstones).
//
// Around them: client.go and config.go (Client, Config), key.go (Key, states), keyread.go (the
// operators' read API), errors.go, header.go (stored response headers), metrics.go (Observer),
// tracing.go (OpenTelemetry spans), listencheck.go (CheckListen), inbox.go (RecordInboxTx),
// nocancel.go (WithoutCancelRequests, for a pool on a primary with a synchronous standby).
package saga
