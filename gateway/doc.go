// Package gateway is the boundary between pgsaga and payment providers: the Gateway
// interface every adapter implements, the outcome class of a charge attempt (Classify), and
// Execute, the helper a call step uses to make one charge exactly once.
//
// Every charge attempt ends in exactly one class (phases.CallOutcome), and each class has one
// consequence:
//
//   - succeeded, declined: the provider's final answer; a decline is a result (a Charge with
//     ChargeStatusDeclined), stored and replayed, never an error.
//   - failed_before: the provider certainly did not act (a refused connection, an explicit
//     "not processed", a validation refusal). A NotDoneError is retried; a PermanentError
//     (Retryable false) is compensated and parked by the engine.
//   - pending: the provider accepted the charge and has not decided. It is never sent again;
//     it is read back (Get) until it is final.
//   - unknown: the provider may or may not have acted (a timeout, a lost response, a 5xx that
//     promises nothing, a status nobody knows). It is resolved by inquiry or by the same key,
//     never by guessing; when nothing can resolve it, Execute returns an error that satisfies
//     phases.IsOutcomeUnknown (ErrCannotResolve, ErrKeyExpired, ErrMismatch,
//     ErrPendingTooLong): the engine parks the key and compensates nothing, since money may
//     have moved.
//
// Guarantees of Execute, given the engine's call journal (Journal):
//
//   - Retry: a charge is always sent with a key derived from the intent (phases.DefaultReference,
//     or DeriveKey over an id from phases.Run.IntentID), so every attempt for the same payment, in
//     this process, after a crash, or in an execution that runs again after a database failover
//     lost the key's commits, carries the same key and reference.
//   - Lost journal: a provider with inquiry that cannot de-duplicate by key is asked by
//     reference before the first send too, since the journal that would say an earlier execution
//     charged can be lost with the key's commits.
//   - Crash and resume: whether an earlier attempt may have reached the provider comes from the
//     journal, not from the step. When one may have, Execute asks the provider by reference
//     first (when it supports inquiry) and takes a charge it finds only if amount, currency and
//     reference match the intent. An empty answer is trusted only once every earlier attempt
//     (and every send of this one) has been quiet — its outcome recorded, or, for an execution
//     that died, its lease's end — for the longer of the in-flight window it was sent under
//     (journaled before the send: Journal.DeclareInFlight) and the gateway's window now
//     (Capabilities.MaxInFlight): a request sent by an execution that lost its lease can land
//     after the next one asked, and a provider's declared window may shrink meanwhile. Before that it
//     waits when the wait fits in ctx, else returns ErrInFlight as phases.RetryAfter, having
//     sent nothing. Without inquiry it re-sends the same key only while the provider still
//     remembers it (Capabilities.KeyRetention).
//   - Pending: a charge known to be pending (answered so, found by inquiry, or recorded in the
//     journal with its id) is never sent again. Execute reads it back until it is final;
//     still pending when its rounds or ctx run out, it returns ErrPending as phases.RetryAfter;
//     pending longer than ExecuteOpts.PendingWindow, ErrPendingTooLong.
//   - Record: Execute calls Journal.RecordCall exactly once on every return path, with what
//     this attempt came to (and the charge's id when it saw the charge). An attempt that sent
//     nothing records failed_before unless it learnt the charge's state (then that state).
//   - Cancel: every call honours its context. A send cut short may have charged: unknown.
//
// Adapters classify by behaviour: a refused connection is failed_before; a timeout, reset or
// unreadable answer after sending is unknown (TransportError); a 5xx is unknown unless the
// provider documents it as "not processed". Get and Inquire change nothing at the provider
// and may always be repeated.
//
// What it cannot promise: an empty inquiry is conclusive only if the provider lands every
// request within its declared MaxInFlight and lists every charge it holds at once; with a
// provider that breaks either, a charge sent again after an empty inquiry can be a second one.
//
// Subpackages: sim is a stateful, fault-injecting provider (in-process and over HTTP),
// stripe an adapter on Stripe's PaymentIntents API, and gatewaytest the conformance suite every
// adapter runs and an in-memory Journal for tests. Both adapters list their charges (Lister).
package gateway
