// Command pgsaga-chaos is pgsaga's chaos soak: it runs the real pgsaga binary as separate
// processes (two serve, two worker, gateway-sim) on a throwaway PostgreSQL cluster and injects
// faults into them while clients submit payment intents, then checks that the promise held: one
// intent, one effect.
//
//	go run ./soak/pgsaga-chaos -duration 10m
//	go run ./soak/pgsaga-chaos -judge /tmp/pgsaga-chaos-123/evidence.json
//
// The world it makes:
//   - gateway-sim with --idempotency=false --inquiry=true: every charge sent is a charge, and only
//     inquiry by reference tells what an earlier attempt did; some charges are pending for a
//     while (--pending), requests land late (--latency-before, so a request may charge after its
//     sender gave up), answers are slow, lost (--lose-response) or refused (--fail-before). On
//     an asynchronous pair it honours keys too (-sim-idempotency): with inquiry alone a failover
//     faster than a lease and the provider's in-flight window can let a lost execution's charge
//     land after the re-execution's empty inquiry, a limit pgsaga documents.
//   - Clients (package client: the same key on every retry, full jitter, Retry-After honoured),
//     each an actor of its own in one of two tenants with its own API key (`pgsaga apikey
//     create`), create invoices and pay one to three parts
//     of each at once, sometimes double-clicking, each request to one of the two serves in turn.
//     Some intents take the key string another client used lately (-shared-keys): the same
//     string in two scopes is two keys, and neither may be answered with the other's response.
//   - Faults, overlapping: kill -9 of a serve or a worker (started again at once or after up to
//     half a lease), SIGSTOP of a serve or a worker for most of a lease (a zombie whose lease
//     runs out while it is frozen), SIGSTOP of every PostgreSQL process for most of a lease (a
//     database pause), outages of the gateway's inquiry, and full PostgreSQL restarts.
//
// With -cluster patroni-sync or patroni-async the database is a Patroni pair
// (soak/internal/pgcluster: etcd and two nodes, synchronous or asynchronous replication) that every process reaches
// through one multi-host URL (target_session_attrs=read-write). A database pause freezes the
// primary node for less than the leader lock's TTL, and failovers take the restarts' place, one
// at a time, every -failover-every (from the pair healthy again to the next): kill -9 of the
// primary's postmaster, a partition of the primary (frozen until the standby is promoted, then
// healed into a demoted old primary), a planned switchover and, asynchronous only, a lossy
// failover (the primary's replication cut while it acknowledges -loss-window of the clients'
// commits, then killed). The summary says how long each took: until a new primary took writes,
// how long no client got a new 201 across it, until the old primary streamed again.
//
// After the run the faults stop and it drains as production would: the workers alone for a
// while, then the clients retry what they got no answer for, then an operator (the harness
// running `pgsaga resume` and `pgsaga settle`) resumes keys parked with attempts exhausted and
// settles those parked with outcome_unknown from what the simulator's ledger says.
//
// After the drain it runs `pgsaga reconcile --json` over the run, then collects the evidence
// (evidence.go): what the clients sent and were answered, byte for byte; the keys (`pgsaga keys
// --json`) and their call journal; the simulator's ledger; the payments and invoices tables; the
// operator's decisions; reconciliation's report; the run's own incidents. It writes it
// to evidence.json and hands it to the judge (judge.go), a function of the evidence alone, which
// checks it against the run's claim. On one server and on a synchronous pair the claim is the
// whole promise:
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
//   - no serve or worker exited on its own, every fault and failover done and undone.
//
// On an asynchronous pair a failover may lose commits the old primary acknowledged, keys
// included, and the claim is the money claim: one charge per intent at the provider (its
// references are the payment derived from the intent, those its answers name and those its
// journal holds, and its payment's id must be the derived one) and one payment; every intent
// finished, except that a key may be gone after its client had the answer (a forgotten key,
// counted); answers to one key may differ in bytes after a lost commit but never in the money
// they name; and every charge no completed key accounts for is in reconciliation's report.
//
// It prints the figures and exits 1 on any violation, leaving the processes' logs, the timeline,
// the evidence and, for each violation, what the run knows of its key (the key's journal, its
// ledger entries, its requests and the faults around them, in violations.txt) in its directory.
// -judge judges a recorded evidence.json again, without running anything.
package main
