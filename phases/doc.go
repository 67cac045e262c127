// Package phases declares operations as ordered steps with named recovery points.
//
// An operation is a list of steps:
//
//   - An atomic phase (Atomic) is a function over one database transaction. Its writes commit
//     together with the advance of the key's recovery point to the phase's name and the renewal
//     of its lease, guarded by the lease's fencing token: a process whose lease was taken over
//     cannot commit a phase. A phase either commits whole or leaves nothing.
//   - An external call (Call) runs between transactions, never inside one. It must be safe to run
//     again after a crash: send a downstream key derived from saved data, and when Run.Resumed
//     is true resolve what an earlier attempt may have done (inquiry) before acting again.
//
// The step that calls Run.Respond ends the operation; the response is stored and replayed byte
// for byte. A step decides a deterministic business outcome by returning Reject: the outcome is
// stored, the failing phase's writes are discarded, and the compensations of the phases that
// already committed run in reverse order (each one its own fenced, resumable transaction). An
// error wrapped by Permanent parks the key for an operator after compensating. Any other error
// is transient: nothing is stored, the key stays started, and a retry or the worker continues
// from the last recovery point.
package phases
