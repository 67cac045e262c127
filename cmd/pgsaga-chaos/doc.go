// Command pgsaga-chaos is pgsaga's chaos soak: it runs the real pgsaga binary as separate processes
// (two serve, two worker, gateway-sim) on a throwaway PostgreSQL cluster and injects faults into
// them while clients submit payment intents, then checks that the promise held: one intent, one
// effect.
//
//	go run ./cmd/pgsaga-chaos -duration 10m
//
// The world it makes:
//   - gateway-sim with --idempotency=false --inquiry=true: every charge sent is a charge, and only
//     inquiry by reference tells what an earlier attempt did; some charges are pending for a
//     while (--pending), requests land late (--latency-before, so a request may charge after its
//     sender gave up), answers are slow, lost (--lose-response) or refused (--fail-before).
//   - Clients (package client: the same key on every retry, full jitter, Retry-After honoured)
//     create invoices and pay one to three parts of each at once, sometimes double-clicking,
//     each request to one of the two serves in turn.
//   - Faults, overlapping: kill -9 of a serve or a worker (started again at once or after up to
//     half a lease), SIGSTOP of a serve or a worker for most of a lease (a zombie whose lease
//     runs out while it is frozen), SIGSTOP of every PostgreSQL process for most of a lease (a
//     database pause), and full PostgreSQL restarts.
//
// After the run the faults stop and it drains as production would: the workers alone for a
// while, then the clients retry what they got no answer for, then an operator (the harness
// running `pgsaga resume` and `pgsaga settle`) resumes keys parked with attempts exhausted and
// settles those parked with outcome_unknown from what the simulator's ledger says.
//
// Then it checks, from the simulator's ledger, the keys (`pgsaga keys --json`, `show --json`)
// and the payments tables: no reference charged twice (a pending charge counts), every 201 has
// exactly its one succeeded charge and payment, every charge is recorded by a succeeded payment,
// no intent lost (every key the clients sent is completed and answered), every answer to a key
// identical and equal to what the key stores, no first request answered as a replay, the
// invoices' books balanced, and no serve or worker exited on its own. It prints the figures and
// exits 1 on any violation, leaving the processes' logs, the timeline and the evidence of each
// violation (the key's journal, its ledger entries, its requests and the faults around them) in
// its directory.
package main
