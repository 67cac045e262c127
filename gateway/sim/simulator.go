package sim

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/internal/faults"
	"github.com/pgsaga/pgsaga/gateway/internal/inflight"
)

// Simulator is an in-memory payment provider with injectable faults. It is safe for
// concurrent use; its ledger lives as long as it does.
type Simulator struct {
	mu       sync.Mutex
	settings Settings
	// dice draws the faults, probable and scripted.
	dice    *faults.Dice
	charges []record
	// byID maps a charge's id to its index in charges.
	byID map[string]int
	// byKey maps an idempotency key to the answer it got and the request it carried; keys are
	// recorded and honoured only while idempotency is on.
	byKey map[string]keyed
	// inFlight is the charges held before they land (latency-before).
	inFlight inflight.Window
	// requestTimeout is the in-process Gateway's per-request timeout (Config.RequestTimeout).
	requestTimeout time.Duration
	// controlSum is Config.ControlToken's SHA-256, nil without one.
	controlSum []byte
}

// record is one charge in the ledger: when it lands, as created, and when and how a pending
// one turns final.
type record struct {
	charge gateway.Charge
	// landAt is when the charge exists for the provider: the request's arrival plus its
	// latency-before hold. Before then no read shows it, however the goroutines that carry the
	// request are scheduled, so the hold is exact.
	landAt time.Time
	// finalAt is when a charge created pending takes status final; zero for the others.
	finalAt time.Time
	final   gateway.Status
}

// landed reports whether the charge exists at now.
func (r record) landed(now time.Time) bool { return !now.Before(r.landAt) }

// at returns the charge as it stands at now.
func (r record) at(now time.Time) gateway.Charge {
	c := r.charge
	if !r.finalAt.IsZero() && !now.Before(r.finalAt) {
		c.Status = r.final
	}
	return c
}

// keyed is the first answer to an idempotency key, replayed as it was (a pending answer stays
// pending, as Stripe's does), and the request that got it.
type keyed struct {
	charge gateway.Charge
	params gateway.ChargeParams
}

// New returns a simulator configured by cfg (nil: idempotency and inquiry on, no faults).
// It panics when cfg is invalid; check it first with cfg.Validate when it comes from a user.
func New(cfg *Config) *Simulator {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("sim.New: %v", err))
	}
	var seed uint64
	var controlSum []byte
	if cfg != nil {
		seed = cfg.Seed
		if cfg.ControlToken != "" {
			sum := sha256.Sum256([]byte(cfg.ControlToken))
			controlSum = sum[:]
		}
	}
	return &Simulator{
		settings:       cfg.WithDefaults(),
		requestTimeout: cfg.requestTimeout(),
		dice:           faults.New(seed),
		byID:           make(map[string]int),
		byKey:          make(map[string]keyed),
		controlSum:     controlSum,
	}
}

// Validate reports every setting of cfg that is out of range, naming it.
func (cfg *Config) Validate() error {
	err := cfg.WithDefaults().validate()
	if cfg != nil && cfg.RequestTimeout < 0 {
		err = errors.Join(err, fmt.Errorf("request timeout must be >= 0, got %s", cfg.RequestTimeout))
	}
	return err
}

// Capabilities returns what the simulator supports now. Its MaxInFlight is never less than what
// a charge request already sent may still take to land: the current setting's hold, or, when a
// request held under an earlier, longer setting is still on its way, that request's hold. Its
// RequestTimeout is the in-process Gateway's (Config.RequestTimeout).
func (s *Simulator) Capabilities() gateway.Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	caps := s.settings.capabilities()
	caps.RequestTimeout = s.requestTimeout
	caps.MaxInFlight = s.inFlight.MaxInFlight(time.Now(), caps.MaxInFlight)
	return caps
}

// Settings returns the current behaviour.
func (s *Simulator) Settings() Settings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settings
}

// SetFaults changes the behaviour atomically: update receives the current settings to
// modify. It returns the new settings, or an error (and changes nothing) when they are out
// of range.
func (s *Simulator) SetFaults(update func(*Settings)) (Settings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.settings
	update(&next)
	if err := next.validate(); err != nil {
		return s.settings, fmt.Errorf("error setting faults: %w", err)
	}
	s.settings = next
	return next, nil
}

// FailNext makes the next n charge requests fail before charging (503), whatever FailBefore
// says. It lets a test script faults without probabilities.
func (s *Simulator) FailNext(n int) { s.script(&s.dice.FailNext, n) }

// LoseNext makes the responses of the next n charge requests that reach the ledger (new or
// replayed) get lost, whatever LoseResponse says.
func (s *Simulator) LoseNext(n int) { s.script(&s.dice.LoseNext, n) }

// HangNext makes the next n charge requests that reach the ledger (new or replayed) get no
// answer at all, whatever the other faults say: the charge is made and its caller waits until
// it gives up, as behind a network path that silently drops the answer. Only the caller's
// deadline ends such a request: it is what a per-request timeout is for.
func (s *Simulator) HangNext(n int) { s.script(&s.dice.HangNext, n) }

// PendingNext makes the next n charges created pending, whatever Pending says.
func (s *Simulator) PendingNext(n int) { s.script(&s.dice.PendingNext, n) }

// script sets one of the scripted fault counters under the lock.
func (s *Simulator) script(counter *int, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*counter = n
}

// Ledger is every charge a simulator ever created, each as it stands.
type Ledger struct {
	// Charges in creation order.
	Charges []gateway.Charge `json:"charges"`
	// ByReference counts the charges created for each reference.
	ByReference map[string]int `json:"by_reference"`
}

// Ledger returns a copy of every charge ever created, each as it stands.
func (s *Simulator) Ledger() Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	l := Ledger{Charges: make([]gateway.Charge, 0, len(s.charges)), ByReference: make(map[string]int)}
	for _, r := range s.charges {
		if r.landed(now) {
			l.Charges = append(l.Charges, r.at(now))
			l.ByReference[r.charge.Reference]++
		}
	}
	return l
}

// ChargesFor counts the charges created for reference, whatever their status.
func (s *Simulator) ChargesFor(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, r := range s.charges {
		if r.charge.Reference == reference && r.landed(now) {
			n++
		}
	}
	return n
}

// Get returns the charge with id as it stands now, or false when there is none.
func (s *Simulator) Get(id string) (gateway.Charge, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	i, ok := s.byID[id]
	if !ok || !s.charges[i].landed(now) {
		return gateway.Charge{}, false
	}
	return s.charges[i].at(now), true
}

// TotalCharges counts every charge ever created.
func (s *Simulator) TotalCharges() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, r := range s.charges {
		if r.landed(now) {
			n++
		}
	}
	return n
}

// errUnavailable is the fail-before fault: nothing was charged.
var errUnavailable = errors.New("simulated provider unavailable (nothing charged)")

// errResponseLost is the lose-response fault: the charge exists, its answer never arrives.
var errResponseLost = errors.New("simulated response lost after charging")

// errKeyReused is a repeated idempotency key carrying a different request.
var errKeyReused = errors.New("idempotency key reused with different parameters")

// errInvalid is a charge request that fails validation.
var errInvalid = errors.New("invalid charge request")

// verdict is what the state machine decided for one charge request; the transports (HTTP
// and in-process) carry it out.
type verdict struct {
	// charge is the created or replayed charge; nil when err is set.
	charge *gateway.Charge
	// err is errUnavailable, errKeyReused or an errInvalid wrap: nothing was charged.
	err error
	// landAt is when the request reaches the provider (its arrival plus the latency-before
	// hold): the transports hold it until then, and its charge exists from then on.
	landAt time.Time
	// Answer is the response's delay after landAt, and whether it hangs (held until the caller
	// gives up, then the connection closes) or is lost (the connection closes instead).
	faults.Answer
}

// charge runs the state machine for one request as it arrives: validation, the latency-before
// hold (the request lands that much later: it takes effect then, whether or not its caller still
// waits), fail-before, idempotent replay or creation (pending or final), then the latency and
// lose-response decisions.
func (s *Simulator) charge(p gateway.ChargeParams) verdict {
	if err := validateParams(p); err != nil {
		return verdict{err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.settings
	arrivedAt := time.Now()
	v := verdict{landAt: arrivedAt.Add(s.dice.Hold(st.LatencyBefore, st.LatencyJitter))}
	if s.dice.FailsBefore(st.FailBefore) {
		v.err = errUnavailable
		return v
	}

	var charge gateway.Charge
	if prev, ok := s.byKey[p.IdempotencyKey]; ok && st.Idempotency && p.IdempotencyKey != "" {
		if prev.params != p {
			v.err = errKeyReused
			return v
		}
		charge = prev.charge
	} else {
		charge = s.create(p, st, arrivedAt, v.landAt)
		if st.Idempotency && p.IdempotencyKey != "" {
			s.byKey[p.IdempotencyKey] = keyed{charge: charge, params: p}
		}
	}

	v.charge, v.Answer = &charge, s.dice.Answer(st.Latency, st.LatencyJitter, st.LoseResponse)
	return v
}

// create adds a charge for p, whose request arrived at arrivedAt, landing at landAt to the ledger
// and returns it as created; s.mu is held.
func (s *Simulator) create(p gateway.ChargeParams, st Settings, arrivedAt, landAt time.Time) gateway.Charge {
	r := record{landAt: landAt, charge: gateway.Charge{
		ID:        fmt.Sprintf("ch_%06d", len(s.charges)+1),
		Amount:    p.Amount,
		Currency:  p.Currency,
		Reference: p.Reference,
		Status:    gateway.StatusSucceeded,
		// The charge exists from when it lands; in UTC without the monotonic reading, so that
		// it compares equal to itself read back over HTTP.
		CreatedAt: landAt.Round(0).UTC(),
	}}
	if st.DeclineOver > 0 && p.Amount > st.DeclineOver {
		r.charge.Status = gateway.StatusDeclined
	}
	if s.dice.Pending(st.Pending) {
		r.final, r.charge.Status = r.charge.Status, gateway.StatusPending
		r.finalAt = landAt.Add(st.PendingFor)
	}
	s.byID[r.charge.ID] = len(s.charges)
	s.charges = append(s.charges, r)
	s.inFlight.Add(arrivedAt, landAt)
	return r.charge
}

// inquire returns the charges for reference as they stand, or false when inquiry is off.
func (s *Simulator) inquire(reference string) ([]gateway.Charge, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.settings.Inquiry {
		return nil, false
	}
	now := time.Now()
	found := []gateway.Charge{}
	for _, r := range s.charges {
		if r.charge.Reference == reference && r.landed(now) {
			found = append(found, r.at(now))
		}
	}
	return found, true
}

func validateParams(p gateway.ChargeParams) error {
	switch {
	case p.Amount <= 0:
		return fmt.Errorf("%w: amount must be > 0, got %d", errInvalid, p.Amount)
	case p.Currency == "":
		return fmt.Errorf("%w: currency is required", errInvalid)
	case p.Reference == "":
		return fmt.Errorf("%w: reference is required", errInvalid)
	}
	return nil
}
