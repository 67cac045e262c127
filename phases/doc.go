// Package phases declares operations as ordered steps with named recovery points.
//
// An operation is a list of steps:
//
//   - An atomic phase (Atomic) is a function over one database transaction. Its writes commit
//     together with the advance of the key's recovery point to the phase's name and the renewal
//     of its lease, guarded by the lease's fencing token: a process whose lease was taken over
//     cannot commit a phase. A phase either commits whole or leaves nothing.
//   - An external call (Call) runs between transactions, never inside one. The engine journals
//     each attempt before it is sent (with the reference the step derives, WithReference, or
//     else DefaultReference, derived from the intent) and
//     records its outcome class after (Run.RecordCall, or succeeded/unknown by the error). On
//     resume, Run.PriorCalls says what earlier attempts did; send the same downstream key, and
//     resolve an attempt that may have reached the provider (inquiry) before acting again —
//     gateway.Execute does both.
//
// Steps share values through typed, named slots (Value): saved with the key, committed with the
// next phase, read back after a crash.
//
// Ids and references derive from the intent — the tenant, the actor and the idempotency key,
// which the client sends again — never from something a phase draws at random (Run.IntentID,
// DefaultReference). With asynchronous replication a database failover can lose commits the
// old primary acknowledged; the client's retry then runs the operation again from the start,
// and only intent-derived ids and references make that execution find the first one's charge
// instead of making a second. IntentID and DefaultReference compute the same values outside a
// run, so a test or a tool finds a row or a provider's record from the key's scope and key.
//
// The step that calls Run.Respond ends the operation; the response is stored and replayed byte
// for byte. A step decides a deterministic business outcome by returning Reject: the outcome is
// stored, the failing phase's writes are discarded, and the compensations of the phases that
// already committed run in reverse order, each in its own fenced transaction that also records
// that it ran, so each commits exactly once. A phase that answers an error while keeping its
// writes (an order held for review, its status written) calls Run.RespondError instead: the
// phase commits with the stored error answer, like Respond. An error wrapped by Permanent parks the key for an
// operator after compensating. An error wrapped by OutcomeUnknown (an effect that may have
// happened and that nothing can resolve) parks it without compensating. Any other error is
// transient: nothing is stored, the key stays started, and a retry or the worker continues from
// the last recovery point (RetryAfter sets when).
//
// Names are stored: an operation's name with every key, a phase's name as a recovery point, a
// call's name in the journal, a Value's name with the saved values. Renaming any of them strands
// keys in flight; keep the old name as an alias (Operation.Aliases, Step.WithAliases) until
// they are done. An operation may declare a Settle hook, with which an operator finishes a
// parked key by a recorded decision.
package phases
