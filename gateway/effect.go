package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgsaga/pgsaga/phases"
)

// Effect is an adapter that makes one kind of external effect at one provider: a payment
// gateway's charges, an SMS provider's messages, a partner's webhook deliveries. P is one
// request (what to send), R the provider's record of it (what it made). Execute drives an
// Effect by the engine's call rules; the adapter only speaks to its provider.
//
// Implementations are safe for concurrent use, and classify every failure by behaviour: an
// error whose provider certainly did not act is NotDone (or phases.Permanent when sending it
// again cannot help); one whose provider may have acted is Unknown. An error they cannot place
// is taken as unknown.
//
// Kind returns what the engine knows of the effect's kind, the same for every adapter of it
// (Charges for every payment Gateway).
//
// Capabilities returns what the provider supports now, its per-request timeout among them.
//
// Send makes the effect once and returns the provider's record of it: succeeded, declined or
// pending. A decline is a result, never an error. It never re-sends on its own.
//
// Inquire returns every record the provider holds for a reference (possibly none), each as it
// stands; it returns an error wrapping ErrUnsupported when Capabilities().Inquiry is false.
//
// Get returns the record with the provider's id as it stands now (a pending one may have turned
// final); an error wrapping ErrNotFound when the provider has no such record, or ErrUnsupported
// when it cannot be read back by id.
//
// Inquire and Get change nothing at the provider and may always be repeated.
//
// Every method returns once ctx is done, with ctx's error (or one wrapping it), whether or not
// the provider answered: the engine bounds each request by the adapter's per-request timeout
// and the call by the lease, and a method that outlives its context holds the key's execution
// past both. gatewaytest checks that Send does.
type Effect[P, R any] interface {
	Kind() *Kind[P, R]
	Capabilities() Capabilities
	Send(ctx context.Context, params P) (*R, error)
	Inquire(ctx context.Context, reference string) ([]R, error)
	Get(ctx context.Context, providerID string) (*R, error)
}

// Kind is what the engine needs to know of one kind of effect, whatever provider makes it: how
// a request is found and keyed, how the provider's record of it stands, and whether a record is
// the effect asked for. One Kind serves every adapter of its kind; every field is required.
type Kind[P, R any] struct {
	// Name names one effect of the kind in errors, such as "charge" or "message".
	Name string
	// Keys returns the reference params is found by (Effect.Inquire) and the idempotency key it
	// is sent with, "" when it has none. Both must derive from the intent (DeriveKey,
	// phases.Run.Reference), so that every attempt sends the same ones.
	Keys func(params P) (reference, idempotencyKey string)
	// Verdict returns the provider's id for r and its status as it stands.
	Verdict func(r *R) (providerID string, status Status)
	// Match returns nil when r is the effect params asks for (a charge's amount, currency and
	// reference), else an error saying how it differs. A record that does not match is never
	// taken for the intent's: Execute returns ErrCannotResolve.
	Match func(params P, r *R) error
	// Recorded returns the record params came to as the call journal holds it, a provider id
	// and a final status, for an attempt that finds its call already decided: nothing is sent
	// or asked.
	Recorded func(params P, providerID string, status Status) *R
}

// validate reports the first field k lacks, naming it.
func (k *Kind[P, R]) validate() error {
	switch {
	case k == nil:
		return errors.New("gateway: the effect's Kind is nil")
	case k.Name == "":
		return errors.New("gateway: Kind.Name is required")
	case k.Keys == nil, k.Verdict == nil, k.Match == nil, k.Recorded == nil:
		return fmt.Errorf("gateway: Kind %q needs Keys, Verdict, Match and Recorded", k.Name)
	}
	return nil
}

// Classify tells what one attempt of an effect of this kind (a Send's result, or
// Execute's) came to:
//
//   - a record with status succeeded, declined or pending: that class; any other status, or
//     neither a record nor an error: unknown (never a decline);
//   - an error: ClassifyError's class.
func (k *Kind[P, R]) Classify(r *R, err error) phases.CallOutcome {
	if err != nil {
		return Classify(err)
	}
	if r == nil {
		return phases.CallOutcomeUnknown
	}
	_, status := k.Verdict(r)
	return status.outcome()
}

// Status is a provider's verdict on one effect, whatever its kind.
type Status string

const (
	// StatusSucceeded: the provider acted (the money moved, the message was accepted). Final.
	StatusSucceeded Status = "succeeded"
	// StatusDeclined: the provider refused; deterministic, stored and replayed. Final.
	StatusDeclined Status = "declined"
	// StatusPending: the provider accepted the request and has not decided yet. It is an
	// effect (sending another one is a second effect); Effect.Get shows it turn final.
	StatusPending Status = "pending"
)

// Final reports whether s is a verdict that will not change (succeeded or declined).
func (s Status) Final() bool {
	return s == StatusSucceeded || s == StatusDeclined
}

// outcome is the call journal's class of a record with status s: unknown for a status that is
// none of ours.
func (s Status) outcome() phases.CallOutcome {
	switch s {
	case StatusSucceeded:
		return phases.CallOutcomeSucceeded
	case StatusDeclined:
		return phases.CallOutcomeDeclined
	case StatusPending:
		return phases.CallOutcomePending
	}
	return phases.CallOutcomeUnknown
}

// rank orders the statuses an inquiry may find by what they settle: the effect happened, it may
// still happen, nothing happened. Zero for a status that is none of ours.
func (s Status) rank() int {
	switch s {
	case StatusSucceeded:
		return 3
	case StatusPending:
		return 2
	case StatusDeclined:
		return 1
	}
	return 0
}

// ErrUnsupported is returned by an adapter asked for something its provider cannot do.
var ErrUnsupported = errors.New("gateway: operation not supported by this provider")

// ErrNotFound is returned by Get for an id the provider does not know.
var ErrNotFound = errors.New("gateway: no such record at the provider")
