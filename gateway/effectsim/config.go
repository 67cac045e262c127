package effectsim

import (
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// Config sets up a Simulator of one kind of effect. Kind and Make are required; the rest
// describes a well-behaved provider with idempotency keys and inquiry that injects no faults.
type Config[P, R any] struct {
	// Kind is the effect's kind: how a request is keyed and a record stands. Required.
	Kind *gateway.Kind[P, R]
	// Make returns the record the provider makes for params: id is its new id, status its
	// verdict as it stands (succeeded, declined when Declines says so, pending until PendingFor
	// has passed for a request PendingNext picked), at when it landed. It is called again each
	// time the record is read, so it must be a pure function of its arguments. Required.
	Make func(params P, id string, status gateway.Status, at time.Time) R
	// Validate returns an error for a request the provider refuses without acting (a
	// phases.Permanent from Send). Defaults to nil: every request is valid.
	Validate func(params P) error
	// Declines reports whether the provider declines params: a record with status declined,
	// a result and not an error. Defaults to nil: nothing is declined.
	Declines func(params P) bool
	// IDPrefix begins every id the provider gives, such as "msg_". Defaults to "fx_".
	IDPrefix string
	// Idempotency, when true, makes a repeated idempotency key answer the first request and
	// make nothing. A pointer so that nil means the default. Defaults to true.
	Idempotency *bool
	// Inquiry, when true, answers Inquire by reference. A pointer so that nil means the
	// default. Defaults to true.
	Inquiry *bool
	// RequestTimeout is the per-request timeout the simulator declares
	// (gateway.Capabilities.RequestTimeout): gateway.Execute gives up a request that takes
	// longer and resolves it within the call. Defaults to 5s.
	RequestTimeout time.Duration
	// KeyRetention is how long the provider says it remembers an idempotency key
	// (gateway.Capabilities.KeyRetention); the simulator itself keeps every key. Defaults to 0:
	// forever.
	KeyRetention time.Duration
	// PendingFor is how long a record PendingNext picked stays pending. Defaults to 2s.
	PendingFor time.Duration
	// Faults are the faults and delays injected from the start. Each defaults to 0: none.
	Faults
	// Seed seeds the random source behind the fault probabilities and jitter, so a test can
	// replay the same faults. Defaults to 0 (still deterministic).
	Seed uint64
}

// Faults are the faults and delays a simulator injects: set from the start by Config and
// changed at run time by SetFaults. Each is off at 0.
type Faults struct {
	// Latency delays every answer after the effect is made.
	Latency time.Duration
	// LatencyJitter adds a uniform random 0..LatencyJitter to Latency, and to LatencyBefore
	// when that is set (each drawn apart).
	LatencyJitter time.Duration
	// LatencyBefore holds every request this long before the effect is made, as a slow network
	// to the provider does: a caller that gave up may still see it land later, and an inquiry
	// made meanwhile finds nothing. Capabilities declares the longest hold as MaxInFlight.
	LatencyBefore time.Duration
	// FailBefore is the probability (0..1) that a request is refused before the provider acts
	// (gateway.NotDone).
	FailBefore float64
	// LoseResponse is the probability (0..1) that the effect is made and its answer then lost
	// (gateway.Unknown).
	LoseResponse float64
}

// defaults of Config's fields.
const (
	defaultIDPrefix       = "fx_"
	defaultRequestTimeout = 5 * time.Second
	defaultPendingFor     = 2 * time.Second
)

// settings are a simulator's behaviour: Config with defaults applied, the faults changeable.
type settings struct {
	idempotency, inquiry bool
	Faults
}

// maxInFlight is the longest a request may be held before its effect is made.
func (s settings) maxInFlight() time.Duration {
	if s.LatencyBefore == 0 {
		return 0
	}
	return s.LatencyBefore + s.LatencyJitter
}

// withDefaults returns a copy of cfg with every unset field given its default.
func (cfg *Config[P, R]) withDefaults() Config[P, R] {
	out := *cfg
	if out.IDPrefix == "" {
		out.IDPrefix = defaultIDPrefix
	}
	if out.RequestTimeout == 0 {
		out.RequestTimeout = defaultRequestTimeout
	}
	if out.PendingFor == 0 {
		out.PendingFor = defaultPendingFor
	}
	return out
}

// validate reports every field of cfg that is missing or out of range, naming it.
func (cfg *Config[P, R]) validate() error {
	if cfg == nil {
		return errors.New("effectsim: Config is required (Kind and Make)")
	}
	var errs []error
	if cfg.Kind == nil {
		errs = append(errs, errors.New("Kind is required"))
	}
	if cfg.Make == nil {
		errs = append(errs, errors.New("Make is required"))
	}
	errs = append(errs, nonNegative("RequestTimeout", cfg.RequestTimeout), nonNegative("KeyRetention", cfg.KeyRetention),
		nonNegative("PendingFor", cfg.PendingFor), cfg.Faults.validate())
	return errors.Join(errs...)
}

// validate reports every fault out of range, naming it.
func (f Faults) validate() error {
	return errors.Join(nonNegative("Latency", f.Latency), nonNegative("LatencyJitter", f.LatencyJitter),
		nonNegative("LatencyBefore", f.LatencyBefore), probability("FailBefore", f.FailBefore),
		probability("LoseResponse", f.LoseResponse))
}

// nonNegative reports a negative duration, naming its field.
func nonNegative(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s must be >= 0, got %s", name, d)
	}
	return nil
}

// probability reports a probability outside [0, 1], naming its field.
func probability(name string, p float64) error {
	if p < 0 || p > 1 {
		return fmt.Errorf("%s must be a probability in [0, 1], got %v", name, p)
	}
	return nil
}
