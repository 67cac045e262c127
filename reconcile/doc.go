// Package reconcile compares a payment provider's charges with the keys here, to find money that
// moved without a record.
//
// Every charge pgsaga sends is journaled, under its downstream reference, in the same commit
// that renews its key's lease, before it is sent. With asynchronous replication a database
// failover can lose commits the old primary acknowledged: a key that completed, its journal and
// its business rows are gone, while the provider keeps the charge. A client that retries runs the
// operation again, and since references and business ids derive from the intent (see
// phases.Run.IntentID and phases.DefaultReference) the provider's key or an inquiry finds the
// first charge and nothing is charged twice. A client that got its answer does not retry: that
// charge is known to nothing here, and only the provider's own list shows it. Check lists the
// provider's charges since a time (gateway.Lister) and reports each one that no key accounts for.
//
// # What accounts for a charge
//
// A key accounts for a charge when it journaled a call under the charge's reference and:
//
//   - the key is started or parked: it is not reported. Such a key shows in `pgsaga keys
//     --stuck`, the console and the parked-key alerts, and finishing or settling it settles its
//     charge; reporting it here too would be a false alarm about something already in view.
//   - the key completed, and its attempts under the reference recorded this charge's provider id,
//     or recorded no provider id at all (a call step that records none, an outcome an operator
//     settled).
//
// Every other charge is unmatched: no key journaled its reference (a failover lost the key's
// commits and the client never retried; a charge another system made on the same provider
// account), or a completed key recorded a different charge under the same reference (the
// provider charged twice for one reference).
//
// # Retention
//
// Completed keys are deleted with their journals after their retention (24h by default, see
// saga.Config.Retention and worker retention GC): a charge older than that is unmatched because
// its record is gone, not because it was lost. Keep `since` within the shortest retention of the
// operations that charge; the worker's periodic reconciliation looks back one hour by default.
//
// # Stored findings
//
// Run (the worker's periodic job) checks a window and records what it found in
// pgsaga_unmatched_charge, which the console lists: a charge found unmatched is inserted; a
// stored one that a later run finds accounted for (the client retried after all, and its
// re-execution journaled the reference again) is deleted, whether or not it is still in the
// window; and one first found longer than Config.Keep ago (7 days) is deleted. Check alone
// writes nothing (pgsaga reconcile).
package reconcile
