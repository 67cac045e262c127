// Command pgsaga-chaos is pgsaga's chaos soak: it runs the real pgsaga binary as separate
// processes (two serve, two worker, gateway-sim) on a throwaway PostgreSQL cluster and injects
// faults into them while clients submit payment intents, then checks that the promise held: one
// intent, one effect.
//
//	go run ./cmd/pgsaga-chaos -duration 10m
//	go run ./cmd/pgsaga-chaos -judge /tmp/pgsaga-chaos-123/evidence.json
//
// The world it makes:
//   - gateway-sim with --idempotency=false --inquiry=true: every charge sent is a charge, and only
//     inquiry by reference tells what an earlier attempt did; some charges are pending for a
//     while (--pending), requests land late (--latency-before, so a request may charge after its
//     sender gave up), answers are slow, lost (--lose-response) or refused (--fail-before).
//   - Clients (package client: the same key on every retry, full jitter, Retry-After honoured),
//     each an actor of its own in one of two tenants, create invoices and pay one to three parts
//     of each at once, sometimes double-clicking, each request to one of the two serves in turn.
//     Some intents take the key string another client used lately (-shared-keys): the same
//     string in two scopes is two keys, and neither may be answered with the other's response.
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
// Then it collects the evidence (evidence.go): what the clients sent and were answered, byte for
// byte; the keys (`pgsaga keys --json`) and their call journal; the simulator's ledger; the
// payments and invoices tables; the operator's decisions; the run's own incidents. It writes it
// to evidence.json and hands it to the judge (judge.go), a function of the evidence alone, which
// checks it against the run's claim:
//   - no reference charged twice (a pending charge counts), and no intent charged twice under two
//     references (the payments its answers name, the references its key's journal holds);
//   - every charge owned by an intent of the run, and recorded by its succeeded payment;
//   - no intent lost: every key the clients sent is completed and its client got an answer;
//   - every answer to a key the same bytes as the first, and what the key stores; none another
//     scope's stored response; no first request answered as a replay; no two intents told they
//     made one invoice or payment;
//   - every 201 has exactly its one succeeded charge and its succeeded payment, every 402
//     payment_failed was the operator's decision and charged nothing, no payment left pending or
//     named by no answer;
//   - the invoices' books balanced: paid is the sum of the succeeded payments, nothing reserved
//     beyond it;
//   - reconciliation (`pgsaga reconcile --json` over the run, after the drain) reports exactly
//     the charges no completed key accounts for: none, on a database that loses no commit;
//   - no serve or worker exited on its own, every fault injected and undone.
//
// It prints the figures and exits 1 on any violation, leaving the processes' logs, the timeline,
// the evidence and, for each violation, what the run knows of its key (the key's journal, its
// ledger entries, its requests and the faults around them, in violations.txt) in its directory.
// -judge judges a recorded evidence.json again, without running anything.
package main
