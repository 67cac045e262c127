package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// ErrKeyExpired means an earlier attempt may have reached a provider that cannot be asked
// what happened (no inquiry), and the idempotency key is older than the provider's key
// retention window: re-sending it could charge twice. The key must be parked for an
// operator. It is permanent: Retryable reports false.
var ErrKeyExpired error = &permanentSentinel{"gateway: idempotency key is older than the provider's key retention window"}

// ErrCannotResolve means an earlier attempt may have reached a provider that supports
// neither inquiry nor idempotency keys, so nothing can tell whether it charged. The key must
// be parked for an operator. It is permanent: Retryable reports false.
var ErrCannotResolve error = &permanentSentinel{"gateway: an earlier attempt may have charged and the provider has neither inquiry nor idempotency keys"}

// permanentSentinel is a sentinel error that classifies as permanent through errors.As.
type permanentSentinel struct{ msg string }

func (e *permanentSentinel) Error() string   { return e.msg }
func (e *permanentSentinel) Retryable() bool { return false }

// ExecuteOpts are the optional settings of one Execute call.
type ExecuteOpts struct {
	// MayHaveReached is true when an earlier attempt (before a crash / on resume) may have
	// reached the provider. Defaults to false.
	MayHaveReached bool
	// KeyCreatedAt is when the downstream key was first used (when the payment row was
	// created); compared with Capabilities.KeyRetention before a key is re-sent. Defaults to
	// the zero time, which skips the check.
	KeyCreatedAt time.Time
	// Now returns the current time. Defaults to time.Now.
	Now func() time.Time
	// Backoff returns the policy for in-call retries. Defaults to an exponential backoff
	// (100ms doubling, at most 2s apart) with at most 4 retries, always bounded by ctx.
	Backoff func() backoff.BackOff
	// OnAttempt, when set, is called after each charge attempt with its outcome and latency
	// (for metrics). Defaults to nil.
	OnAttempt func(outcome Outcome, elapsed time.Duration)
}

func (o *ExecuteOpts) withDefaults() ExecuteOpts {
	var out ExecuteOpts
	if o != nil {
		out = *o
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Backoff == nil {
		out.Backoff = defaultBackoff
	}
	return out
}

func defaultBackoff() backoff.BackOff {
	return backoff.WithMaxRetries(backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(100*time.Millisecond),
		backoff.WithMaxInterval(2*time.Second),
		backoff.WithMaxElapsedTime(0),
	), 4)
}

// Execute makes one charge exactly once on gw, retrying in-process while that is safe.
//
// It returns the provider's Charge, succeeded or declined (a decline is a result, not an
// error), or an error the caller classifies with Classify:
//
//   - When opts.MayHaveReached and the provider supports inquiry, it asks by reference first
//     and returns the charge found (a succeeded one in preference) without charging.
//   - When opts.MayHaveReached and the provider has no inquiry, it re-sends the same key only
//     while the key is within Capabilities.KeyRetention (error wrapping ErrKeyExpired
//     otherwise), and only if the provider supports keys (ErrCannotResolve otherwise).
//   - A retryable failure is charged again; an ambiguous one is resolved by inquiry (found:
//     done; not found: charge again) or by re-sending the same key, and otherwise returned
//     as is: it never guesses.
//   - When retries run out or ctx ends, it returns the last classified error; if any attempt
//     may have reached the provider and was not resolved, that error is an AmbiguousError,
//     so the caller resumes with MayHaveReached set.
func Execute(ctx context.Context, gw Gateway, params ChargeParams, opts *ExecuteOpts) (*Charge, error) {
	o := opts.withDefaults()
	caps := gw.Capabilities()

	if o.MayHaveReached && !caps.Inquiry {
		if !caps.IdempotencyKeys || params.IdempotencyKey == "" {
			return nil, fmt.Errorf("error resuming charge %q: %w", params.Reference, ErrCannotResolve)
		}
		if caps.KeyRetention > 0 && !o.KeyCreatedAt.IsZero() && o.KeyCreatedAt.Before(o.Now().Add(-caps.KeyRetention)) {
			return nil, fmt.Errorf("error resuming charge %q: key %q first used at %s, provider keeps keys for %s: %w",
				params.Reference, params.IdempotencyKey, o.KeyCreatedAt.Format(time.RFC3339), caps.KeyRetention, ErrKeyExpired)
		}
	}

	x := &execution{
		gw:             gw,
		caps:           caps,
		params:         params,
		opts:           o,
		mayHaveReached: o.MayHaveReached,
		needInquiry:    o.MayHaveReached && caps.Inquiry,
	}
	charge, err := backoff.RetryWithData(func() (*Charge, error) { return x.attempt(ctx) }, backoff.WithContext(o.Backoff(), ctx))
	if err == nil {
		return charge, nil
	}
	return nil, x.finalError(ctx, err)
}

// execution is the state of one Execute call across its attempts.
type execution struct {
	gw     Gateway
	caps   Capabilities
	params ChargeParams
	opts   ExecuteOpts

	// mayHaveReached is true while some attempt may have charged and nothing has resolved it.
	mayHaveReached bool
	// needInquiry is true when the next attempt must ask the provider before charging.
	needInquiry bool
	// lastErr is the last classified failure.
	lastErr error
}

// attempt is one pass of the retry loop: an inquiry when one is due, then a charge. Errors
// wrapped in backoff.Permanent stop the loop.
func (x *execution) attempt(ctx context.Context) (*Charge, error) {
	if x.needInquiry {
		found, err := x.gw.Inquire(ctx, x.params.Reference)
		if errors.Is(err, ErrUnsupported) {
			// The provider no longer answers inquiries: resolve with what it still supports.
			return x.withoutInquiry(ctx)
		}
		if err != nil {
			err = fmt.Errorf("error inquiring about charge %q: %w", x.params.Reference, err)
			if Classify(nil, err) == OutcomePermanent || errors.Is(err, ErrUnsupported) {
				return nil, backoff.Permanent(err)
			}
			x.lastErr = err
			return nil, err
		}
		x.needInquiry = false
		if charge := pick(found); charge != nil {
			return charge, nil
		}
		// Inquiry is authoritative: nothing found means no earlier attempt charged.
		x.mayHaveReached = false
	}
	return x.charge(ctx)
}

// charge sends the charge once and classifies the answer for the retry loop.
func (x *execution) charge(ctx context.Context) (*Charge, error) {
	start := x.opts.Now()
	charge, err := x.gw.Charge(ctx, x.params)
	outcome := Classify(charge, err)
	if x.opts.OnAttempt != nil {
		x.opts.OnAttempt(outcome, x.opts.Now().Sub(start))
	}
	switch outcome {
	case OutcomeSucceeded, OutcomeDeclined:
		return charge, nil
	case OutcomeRetryable:
		x.lastErr = fmt.Errorf("error charging %q: %w", x.params.Reference, err)
		return nil, x.lastErr
	case OutcomeAmbiguous:
		x.mayHaveReached = true
		x.lastErr = fmt.Errorf("error charging %q: %w", x.params.Reference, err)
		switch {
		case x.caps.Inquiry:
			x.needInquiry = true
			return nil, x.lastErr
		case x.caps.IdempotencyKeys && x.params.IdempotencyKey != "":
			return nil, x.lastErr
		default:
			// Neither inquiry nor keys: another charge could be a second one. Never guess.
			return nil, backoff.Permanent(x.lastErr)
		}
	default:
		return nil, backoff.Permanent(fmt.Errorf("error charging %q: %w", x.params.Reference, err))
	}
}

// withoutInquiry continues an attempt that needed an inquiry the provider refused: re-send the
// same key if the provider honours keys (and the key is within its window), else stop: nothing
// can tell whether the earlier attempt charged.
func (x *execution) withoutInquiry(ctx context.Context) (*Charge, error) {
	x.caps = x.gw.Capabilities()
	x.caps.Inquiry = false
	x.needInquiry = false
	if !x.caps.IdempotencyKeys || x.params.IdempotencyKey == "" {
		return nil, backoff.Permanent(fmt.Errorf("error resolving charge %q: %w", x.params.Reference, ErrCannotResolve))
	}
	if x.caps.KeyRetention > 0 && !x.opts.KeyCreatedAt.IsZero() && x.opts.KeyCreatedAt.Before(x.opts.Now().Add(-x.caps.KeyRetention)) {
		return nil, backoff.Permanent(fmt.Errorf("error resolving charge %q: %w", x.params.Reference, ErrKeyExpired))
	}
	return x.charge(ctx)
}

// finalError is what Execute returns when the loop gave up with err: permanent errors as
// they are, otherwise the last classified failure, made ambiguous when an unresolved
// attempt may have charged.
func (x *execution) finalError(ctx context.Context, err error) error {
	if Classify(nil, err) == OutcomePermanent {
		return err
	}
	last := x.lastErr
	if last == nil {
		// ctx ended before any attempt failed on its own.
		last = fmt.Errorf("error charging %q: %w", x.params.Reference, err)
	} else if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) && !errors.Is(last, ctxErr) {
		last = fmt.Errorf("%w (gave up: %w)", last, ctxErr)
	}
	if x.mayHaveReached {
		if Classify(nil, last) != OutcomeAmbiguous {
			return &AmbiguousError{Err: last}
		}
		return last
	}
	if Classify(nil, last) != OutcomeRetryable {
		return &RetryableError{Err: last}
	}
	return last
}

// pick returns the charge an inquiry settles on: a succeeded one in preference to a declined
// one, nil when there is none.
func pick(charges []Charge) *Charge {
	var declined *Charge
	for i := range charges {
		switch charges[i].Status {
		case ChargeStatusSucceeded:
			c := charges[i]
			return &c
		case ChargeStatusDeclined:
			if declined == nil {
				c := charges[i]
				declined = &c
			}
		}
	}
	return declined
}
