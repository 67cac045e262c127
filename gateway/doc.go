// Package gateway is the boundary between pgsaga and the providers an operation acts through:
// a payment gateway, an SMS provider, a partner's webhook, any external effect. It holds the
// engine's rules for an external call once, for every kind of effect, in Execute, and the
// payment gateway built on them (Gateway).
//
// # Effects
//
// An Effect[P, R] is an adapter that makes one kind of effect at one provider: Send(P) makes it
// once and answers the provider's record R; Inquire(reference) asks what the provider holds for
// a reference; Get(id) reads a record back. Its Kind says what the engine needs to know of the
// kind, whatever the provider: how a request is keyed and found (Keys), how a record stands
// (Verdict: the provider's id and a Status), whether a record is the intent's (Match). Charges
// is the Kind of payments, sms.Kind of text messages, webhook.Kind of deliveries.
//
// Capabilities is what the provider supports, and decides how an attempt that may have reached
// it is resolved:
//
//   - IdempotencyKeys: a repeated key answers the first request. The same key is sent again,
//     while the provider remembers it (KeyRetention).
//   - Inquiry: the provider can be asked by reference. It is asked before anything is sent
//     again, and before the first send when it has no keys.
//   - MaxInFlight: how long a request sent may take to land. An empty inquiry counts only
//     after every earlier attempt has been quiet that long.
//   - RequestTimeout: how long one request to the provider may take. Execute cuts every
//     send, inquiry and read back at it, so a lost answer costs one timeout and the call resolves
//     it in the time the engine gave it, instead of the whole call waiting for an answer that
//     never comes. Every adapter states its own; keep it under half of the engine's call timeout.
//
// In a call step the run is the call's journal:
//
//	msg, err := sms.Send(ctx, run, provider, sms.Params{To: to, Text: text, Reference: run.Reference()}, nil)
//
// sms.Send and webhook.Deliver are Execute for their kind; a payment calls Execute on its
// Gateway.
//
// # Outcome classes
//
// Every attempt ends in exactly one class (phases.CallOutcome), and each class has one
// consequence:
//
//   - succeeded, declined: the provider's final answer; a decline is a result (a record with
//     StatusDeclined), stored and replayed, never an error.
//   - failed_before: the provider certainly did not act (a refused connection, an explicit
//     "not processed", a validation refusal). NotDone is retried; phases.Permanent
//     (Retryable false) is compensated and parked by the engine.
//   - pending: the provider accepted the request and has not decided. It is never sent again;
//     it is read back (Get) until it is final.
//   - unknown: the provider may or may not have acted (a timeout, a lost response, a 5xx that
//     promises nothing, a status nobody knows). It is resolved by inquiry or by the same key,
//     never by guessing; when nothing can resolve it, Execute returns an error that
//     satisfies phases.IsOutcomeUnknown (ErrCannotResolve, with the reason): the engine parks
//     the key and compensates nothing, since money may have moved or a message gone out.
//
// # Guarantees of Execute, given the engine's call journal (Journal)
//
//   - Retry: a request is always sent with a key derived from the intent (phases.DefaultReference,
//     or DeriveKey over an id from phases.Run.IntentID), so every attempt for the same intent, in
//     this process, after a crash, or in an execution that runs again after a database failover
//     lost the key's commits, carries the same key and reference.
//   - Lost journal: a provider with inquiry that cannot de-duplicate by key is asked by
//     reference before the first send too, since the journal that would say an earlier execution
//     acted can be lost with the key's commits.
//   - Crash and resume: whether an earlier attempt may have reached the provider comes from the
//     journal, not from the step. When one may have, Execute asks the provider by
//     reference first (when it supports inquiry) and takes a record it finds only if it matches
//     the intent (Kind.Match). An empty answer is trusted only once every earlier attempt (and
//     every send of this one) has been quiet — its outcome recorded, or, for an execution that
//     died, its lease's end — for the longer of the in-flight window it was sent under
//     (journaled before the send: Journal.DeclareInFlight) and the provider's window now
//     (Capabilities.MaxInFlight): a request sent by an execution that lost its lease can land
//     after the next one asked, and a provider's declared window may shrink meanwhile. Before
//     that it waits when the wait fits in ctx, else returns ErrInFlight as phases.RetryAfter,
//     having sent nothing. Without inquiry it re-sends the same key only while the provider
//     still remembers it (Capabilities.KeyRetention).
//   - Pending: an effect known to be pending (answered so, found by inquiry, or recorded in the
//     journal with its id) is never sent again. Execute reads it back until it is final;
//     still pending when its rounds or ctx run out, it returns ErrPending as phases.RetryAfter;
//     pending longer than ExecuteOpts.PendingWindow, ErrCannotResolve.
//   - Record: Execute calls Journal.RecordCall exactly once on every return path, with what
//     this attempt came to (and the provider's id when it saw the effect). An attempt that sent
//     nothing records failed_before unless it learnt the effect's state (then that state).
//   - Cancel: every call honours its context, and every request its RequestTimeout. A send cut
//     short may have acted: unknown.
//
// Adapters classify by behaviour: a refused connection is failed_before; a timeout, reset or
// unreadable answer after sending is unknown (TransportError); a 5xx is unknown unless the
// provider documents it as "not processed". Inquire and Get change nothing at the provider
// and may always be repeated.
//
// What it cannot promise: an empty inquiry is conclusive only if the provider lands every
// request within its declared MaxInFlight and lists everything it holds at once; with a
// provider that breaks either, a request sent again after an empty inquiry can be a second one.
//
// # Payments
//
// Gateway is the Effect of charges, ChargeParams and Charge its request and record, Charges its
// Kind: an adapter's Send makes one charge, and Execute(ctx, run, gw, params, nil) makes it
// exactly once. Lister is a provider's list of charges, which reconciliation reads.
//
// # Subpackages
//
// sim is a stateful, fault-injecting payment provider (in-process and over HTTP), stripe an
// adapter on Stripe's PaymentIntents API; both list their charges. effectsim is a fault-injecting
// in-process provider of any Kind. sms is the effect of a text message, with a simulated
// provider that has no keys and answers inquiries; webhook the effect of a delivery to a partner
// that de-duplicates by Idempotency-Key, with its HTTP client and a simulated partner.
// gatewaytest is the conformance suite every adapter runs (RunEffect for any effect, Run for a
// payment gateway) and an in-memory Journal for tests.
package gateway
