// Package failover holds the failover tests of pgsaga on a replicated PostgreSQL: a Patroni pair
// started by soak/internal/pgcluster, shared by the package's tests (which run one after
// another, as each of them fails the cluster over). It has no code of its own.
//
// What they show, in synchronous mode (the standby acknowledges every commit):
//   - the real pgsaga serve and worker, connected with a multi-host URL, ride out a kill -9 of
//     the primary, a partition of it and a switchover under concurrent payments: every answer a
//     client got replays byte for byte afterwards, no payment is charged twice, none is lost;
//   - a primary cut off while an execution is committing on it never acknowledges that commit
//     after the standby took over: healed, the commit waits for a synchronous standby that is
//     gone until its Patroni demotes it, and the key finishes once, on the new primary.
//
// And in asynchronous mode, that a lossy failover (pgcluster.LossyFailover) loses a key the old
// primary completed and acknowledged, while the provider keeps the charge: what reconciliation
// has to find.
package failover
