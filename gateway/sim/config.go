package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// Config sets up a Simulator. The zero value (or nil) is a well-behaved provider that
// supports idempotency keys and inquiry and injects no faults.
type Config struct {
	// Idempotency, when true, makes a repeated Idempotency-Key return the first answer and
	// create nothing. A pointer so that nil means the default. Defaults to true.
	Idempotency *bool
	// Inquiry, when true, serves GET /charges?reference=R. Defaults to true.
	Inquiry *bool
	// Faults are the faults and delays injected from the start. Each defaults to 0: none.
	Faults
	// PendingFor is how long a pending charge (Faults.Pending) stays pending. Defaults to 2s.
	PendingFor time.Duration
	// Seed seeds the random source behind the fault probabilities and jitter, so a test can
	// replay the same faults. Defaults to 0 (still deterministic).
	Seed uint64
	// RequestTimeout is the per-request timeout the in-process Gateway declares
	// (gateway.Capabilities.RequestTimeout): gateway.Execute gives up a charge, an inquiry or a
	// read back that takes longer (a Latency fault) and goes on to resolve it. Defaults to 5s.
	RequestTimeout time.Duration
	// ControlToken, when set, guards the control endpoints over HTTP (GET /_sim/ledger,
	// GET /_sim/info, POST /_sim/faults): a request must carry "Authorization: Bearer
	// <ControlToken>", or it is answered 401 unauthenticated. The wire format (/charges) stays
	// open, as a provider's API is to its clients. Defaults to "": anyone who reaches the port
	// may change the faults.
	ControlToken string
}

// Faults are the faults and delays a simulator injects: set from the start by Config, changed at
// run time by SetFaults or POST /_sim/faults. Each is off at 0.
type Faults struct {
	// Latency delays every charge response after the charge is created.
	Latency time.Duration
	// LatencyJitter adds a uniform random 0..LatencyJitter to Latency, and to LatencyBefore
	// when that is set (each drawn apart).
	LatencyJitter time.Duration
	// FailBefore is the probability (0..1) that a charge request answers 503 without
	// charging.
	FailBefore float64
	// LoseResponse is the probability (0..1) that a charge is created and its response then
	// lost (connection closed).
	LoseResponse float64
	// DeclineOver declines charges whose amount exceeds it; 0 turns declines off.
	DeclineOver int64
	// LatencyBefore holds every charge request this long before the charge is created, as a
	// slow network to the provider does: a caller that gave up may still be charged later, and
	// an inquiry made meanwhile finds nothing. GET /_sim/info reports the longest hold (plus
	// LatencyJitter) as max_in_flight_ms.
	LatencyBefore time.Duration
	// Pending is the probability (0..1) that a charge is created pending: it answers 201 with
	// "status":"pending" and turns final (succeeded, or declined by DeclineOver) after
	// PendingFor.
	Pending float64
}

// Settings are a simulator's current behaviour, as changed at run time by SetFaults or
// POST /_sim/faults.
type Settings struct {
	// Idempotency: a repeated Idempotency-Key returns the first answer and creates nothing.
	Idempotency bool
	// Inquiry: GET /charges?reference=R is served (404 otherwise).
	Inquiry bool
	// Faults are the faults and delays injected.
	Faults
	// PendingFor is how long a pending charge stays pending; 0 turns it final at once.
	PendingFor time.Duration
}

// defaultPendingFor is Config.PendingFor's default.
const defaultPendingFor = 2 * time.Second

// DefaultRequestTimeout is the per-request timeout of the in-process Gateway and of Client unless
// configured: far longer than the simulator takes without faults, and well under half of the
// engine's default call timeout (20s), so that a lost answer leaves time to resolve it.
const DefaultRequestTimeout = 5 * time.Second

// requestTimeout is cfg's RequestTimeout with its default applied.
func (cfg *Config) requestTimeout() time.Duration {
	if cfg == nil || cfg.RequestTimeout == 0 {
		return DefaultRequestTimeout
	}
	return cfg.RequestTimeout
}

// MaxInFlight is the longest a charge request may be held before its charge is created:
// LatencyBefore plus LatencyJitter when LatencyBefore is set, 0 otherwise.
func (s Settings) MaxInFlight() time.Duration {
	if s.LatencyBefore == 0 {
		return 0
	}
	return s.LatencyBefore + s.LatencyJitter
}

// WithDefaults returns the settings cfg describes, with defaults applied.
func (cfg *Config) WithDefaults() Settings {
	s := Settings{Idempotency: true, Inquiry: true, PendingFor: defaultPendingFor}
	if cfg == nil {
		return s
	}
	if cfg.Idempotency != nil {
		s.Idempotency = *cfg.Idempotency
	}
	if cfg.Inquiry != nil {
		s.Inquiry = *cfg.Inquiry
	}
	s.Faults = cfg.Faults
	if cfg.PendingFor != 0 {
		s.PendingFor = cfg.PendingFor
	}
	return s
}

// validate reports the first setting out of range, naming it.
func (s Settings) validate() error {
	var errs []error
	if s.Latency < 0 {
		errs = append(errs, fmt.Errorf("latency must be >= 0, got %s", s.Latency))
	}
	if s.LatencyJitter < 0 {
		errs = append(errs, fmt.Errorf("latency jitter must be >= 0, got %s", s.LatencyJitter))
	}
	if s.FailBefore < 0 || s.FailBefore > 1 {
		errs = append(errs, fmt.Errorf("fail-before must be a probability in [0, 1], got %v", s.FailBefore))
	}
	if s.LoseResponse < 0 || s.LoseResponse > 1 {
		errs = append(errs, fmt.Errorf("lose-response must be a probability in [0, 1], got %v", s.LoseResponse))
	}
	if s.LatencyBefore < 0 {
		errs = append(errs, fmt.Errorf("latency-before must be >= 0, got %s", s.LatencyBefore))
	}
	if s.Pending < 0 || s.Pending > 1 {
		errs = append(errs, fmt.Errorf("pending must be a probability in [0, 1], got %v", s.Pending))
	}
	if s.PendingFor < 0 {
		errs = append(errs, fmt.Errorf("pending-for must be >= 0, got %s", s.PendingFor))
	}
	if s.DeclineOver < 0 {
		errs = append(errs, fmt.Errorf("decline-over must be >= 0, got %d", s.DeclineOver))
	}
	return errors.Join(errs...)
}

// capabilities is what a gateway with these settings supports; KeyRetention is 0 (keys are
// kept forever).
func (s Settings) capabilities() gateway.Capabilities {
	return gateway.Capabilities{IdempotencyKeys: s.Idempotency, Inquiry: s.Inquiry, MaxInFlight: s.MaxInFlight()}
}
