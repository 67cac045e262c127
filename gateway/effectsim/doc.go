// Package effectsim is an in-process provider simulator for any kind of effect, with
// injectable faults: the provider behind an SMS, a webhook partner or any effect a test needs,
// as gateway/sim is for payments. A Simulator is a gateway.Effect; it keeps every effect it made
// for its lifetime, so a test can count them by reference (Count) and prove that a lost answer
// did not make a second one.
//
// Config says what the provider supports: idempotency keys (a repeated key answers the first
// request and makes nothing; a key carrying another request is refused as unknown, since the
// first one was made) and inquiry by reference, each on by default, and the per-request timeout
// it declares.
//
// Faults apply to Send in this order: latency-before (the request is held before it reaches the
// provider, whether or not its caller still waits: it lands later, and an inquiry meanwhile
// finds nothing), fail-before (nothing done, gateway.NotDone), validation (a
// phases.Permanent), then the effect is made (declined when Config.Declines says so,
// pending for Config.PendingFor when PendingNext picked it) or the first answer to its key
// replayed, then latency, then the lost answer (gateway.Unknown), or no answer at all
// until the caller gives up (HangNext). FailNext, LoseNext, HangNext and PendingNext script the
// next requests; FailBefore and LoseResponse are probabilities drawn from Config.Seed.
package effectsim
