package effectsim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/internal/faults"
	"github.com/pgsaga/pgsaga/gateway/internal/inflight"
	"github.com/pgsaga/pgsaga/internal/sleep"
	"github.com/pgsaga/pgsaga/phases"
)

// Simulator is an in-memory provider of one kind of effect with injectable faults, and the
// gateway.Effect that reaches it in-process. It is safe for concurrent use; its records live as
// long as it does.
type Simulator[P, R any] struct {
	// cfg is the Config with its defaults; settings holds the faults as they are now.
	cfg Config[P, R]

	mu       sync.Mutex
	settings settings
	// dice draws the faults, probable and scripted.
	dice    *faults.Dice
	records []record[P]
	// byID maps a record's id to its index in records.
	byID map[string]int
	// byKey is each idempotency key's first answer, replayed as it was (a pending answer stays
	// pending); keys are recorded and honoured only while idempotency is on.
	byKey map[string]R
	// inFlight is the effects held before they land (latency-before).
	inFlight inflight.Window
}

var _ gateway.Effect[struct{}, struct{}] = (*Simulator[struct{}, struct{}])(nil)

// record is one effect the provider made: when it lands, and how a pending one turns final.
type record[P any] struct {
	params P
	id     string
	// landAt is when the effect exists for the provider: the request's arrival plus its
	// latency-before hold. Before then no read shows it.
	landAt time.Time
	// status is its verdict as made; a pending one takes final at finalAt.
	status  gateway.Status
	final   gateway.Status
	finalAt time.Time
}

func (r record[P]) landed(now time.Time) bool { return !now.Before(r.landAt) }

// statusAt is the record's status as it stands at now.
func (r record[P]) statusAt(now time.Time) gateway.Status {
	if r.status == gateway.StatusPending && !now.Before(r.finalAt) {
		return r.final
	}
	return r.status
}

// New returns a simulator configured by cfg. It panics when cfg is invalid (Kind or Make
// missing, a fault out of range); check it first with Validate when it comes from a user.
func New[P, R any](cfg *Config[P, R]) *Simulator[P, R] {
	if err := Validate(cfg); err != nil {
		panic(fmt.Sprintf("effectsim.New: %v", err))
	}
	return &Simulator[P, R]{
		cfg:      cfg.withDefaults(),
		settings: settings{idempotency: cfg.Idempotency == nil || *cfg.Idempotency, inquiry: cfg.Inquiry == nil || *cfg.Inquiry, Faults: cfg.Faults},
		dice:     faults.New(cfg.Seed),
		byID:     make(map[string]int),
		byKey:    make(map[string]R),
	}
}

// Validate reports every field of cfg that is missing or out of range, naming it.
func Validate[P, R any](cfg *Config[P, R]) error { return cfg.validate() }

// Kind is the effect's kind (Config.Kind).
func (s *Simulator[P, R]) Kind() *gateway.Kind[P, R] { return s.cfg.Kind }

// Capabilities returns what the simulator supports now. Its MaxInFlight is never less than what
// a request already sent may still take to land: the current hold, or, when a request held
// under an earlier, longer setting is still on its way, that request's hold.
func (s *Simulator[P, R]) Capabilities() gateway.Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return gateway.Capabilities{
		IdempotencyKeys: s.settings.idempotency,
		Inquiry:         s.settings.inquiry,
		KeyRetention:    s.cfg.KeyRetention,
		MaxInFlight:     s.inFlight.MaxInFlight(time.Now(), s.settings.maxInFlight()),
		RequestTimeout:  s.cfg.RequestTimeout,
	}
}

// SetFaults changes the faults atomically: update receives the current ones to modify. It
// returns an error (and changes nothing) when they are out of range.
func (s *Simulator[P, R]) SetFaults(update func(*Faults)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.settings.Faults
	update(&next)
	if err := next.validate(); err != nil {
		return fmt.Errorf("error setting faults: %w", err)
	}
	s.settings.Faults = next
	return nil
}

// FailNext makes the next n requests fail before the provider acts, whatever FailBefore says.
func (s *Simulator[P, R]) FailNext(n int) { s.script(&s.dice.FailNext, n) }

// LoseNext makes the answers of the next n requests that reach the provider (new or replayed)
// get lost, whatever LoseResponse says.
func (s *Simulator[P, R]) LoseNext(n int) { s.script(&s.dice.LoseNext, n) }

// HangNext makes the next n requests that reach the provider (new or replayed) get no answer at
// all: the effect is made and its caller waits until it gives up. Only the caller's deadline
// ends such a request: it is what a per-request timeout is for.
func (s *Simulator[P, R]) HangNext(n int) { s.script(&s.dice.HangNext, n) }

// PendingNext makes the next n effects made pending: they turn final after Config.PendingFor.
func (s *Simulator[P, R]) PendingNext(n int) { s.script(&s.dice.PendingNext, n) }

func (s *Simulator[P, R]) script(counter *int, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*counter = n
}

// Count counts the effects made for reference, whatever their status.
func (s *Simulator[P, R]) Count(reference string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, r := range s.records {
		if ref, _ := s.cfg.Kind.Keys(r.params); ref == reference && r.landed(now) {
			n++
		}
	}
	return n
}

// Records returns every effect made so far, oldest first, each as it stands.
func (s *Simulator[P, R]) Records() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := make([]R, 0, len(s.records))
	for _, r := range s.records {
		if r.landed(now) {
			out = append(out, s.at(r, now))
		}
	}
	return out
}

// at is the record r as it stands at now; s.mu is held.
func (s *Simulator[P, R]) at(r record[P], now time.Time) R {
	return s.cfg.Make(r.params, r.id, r.statusAt(now), r.landAt)
}

// The simulator's failures, each wrapped in the gateway error type that classifies it.
var (
	// ErrUnavailable is the fail-before fault: the provider did not act (gateway.NotDone).
	ErrUnavailable = errors.New("effectsim: simulated provider unavailable (nothing done)")
	// ErrResponseLost is the lose-response fault: the effect was made, its answer never arrives
	// (gateway.Unknown).
	ErrResponseLost = errors.New("effectsim: simulated answer lost after the effect was made")
	// ErrKeyReused is a repeated idempotency key carrying another request: the first one under
	// it was made, and may be what the caller meant (gateway.Unknown).
	ErrKeyReused = errors.New("effectsim: idempotency key reused with another request")
	// ErrInvalid is a request Config.Validate refused (phases.Permanent).
	ErrInvalid = errors.New("effectsim: invalid request")
)

// verdict is what the provider decided for one request as it arrived; Send carries it out.
type verdict[R any] struct {
	// answer is the record made or replayed; nil when err is set.
	answer *R
	// err is ErrUnavailable, ErrKeyReused or an ErrInvalid wrap: nothing was made.
	err error
	// landAt is when the request reaches the provider (its arrival plus the latency-before
	// hold): Send holds it until then, and its effect exists from then on.
	landAt time.Time
	// Answer is the answer's delay after landAt, and whether it is lost or hangs until the
	// caller gives up.
	faults.Answer
}

// Send makes the effect for params, or replays the first answer to its idempotency key. A
// request refused before acting, or a context ended before the call, is gateway.NotDone;
// a lost answer, a context ending while the request is held (latency-before: it still lands
// later) or waits for its answer, and a reused key gateway.Unknown; an invalid request a
// phases.Permanent.
func (s *Simulator[P, R]) Send(ctx context.Context, params P) (*R, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("%s not sent: %w", s.cfg.Kind.Name, err))
	}
	v := s.decide(params)
	if !sleep.For(ctx, time.Until(v.landAt)) {
		return nil, gateway.Unknown(fmt.Errorf("gave up while the %s was on its way: %w", s.cfg.Kind.Name, ctx.Err()))
	}
	switch {
	case errors.Is(v.err, ErrUnavailable):
		return nil, gateway.NotDone(v.err)
	case errors.Is(v.err, ErrKeyReused):
		return nil, gateway.Unknown(v.err)
	case v.err != nil:
		return nil, phases.Permanent(v.err)
	}
	if v.Hang {
		<-ctx.Done()
		return nil, gateway.Unknown(fmt.Errorf("no answer to the %s: %w", s.cfg.Kind.Name, ctx.Err()))
	}
	if !sleep.For(ctx, v.Delay) {
		return nil, gateway.Unknown(fmt.Errorf("waiting for the %s's answer: %w", s.cfg.Kind.Name, ctx.Err()))
	}
	if v.Lose {
		return nil, gateway.Unknown(ErrResponseLost)
	}
	return v.answer, nil
}

// decide runs the provider for one request as it arrives: validation, the latency-before hold,
// fail-before, replay of a known key or a new effect (declined or pending as configured), then
// the latency and lost-answer decisions.
func (s *Simulator[P, R]) decide(params P) verdict[R] {
	now := time.Now()
	if s.cfg.Validate != nil {
		if err := s.cfg.Validate(params); err != nil {
			return verdict[R]{err: fmt.Errorf("%w: %w", ErrInvalid, err), landAt: now}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.settings
	v := verdict[R]{landAt: now.Add(s.dice.Hold(st.LatencyBefore, st.LatencyJitter))}
	if s.dice.FailsBefore(st.FailBefore) {
		v.err = ErrUnavailable
		return v
	}

	_, key := s.cfg.Kind.Keys(params)
	if prev, ok := s.byKey[key]; ok && st.idempotency && key != "" {
		if err := s.cfg.Kind.Match(params, &prev); err != nil {
			v.err = fmt.Errorf("%w: %v", ErrKeyReused, err)
			return v
		}
		v.answer = &prev
	} else {
		answer := s.makeRecord(params, now, v.landAt)
		if st.idempotency && key != "" {
			s.byKey[key] = answer
		}
		v.answer = &answer
	}

	v.Answer = s.dice.Answer(st.Latency, st.LatencyJitter, st.LoseResponse)
	return v
}

// makeRecord adds the effect for params, arrived at arrivedAt and landing at landAt, and
// returns it as made; s.mu is held.
func (s *Simulator[P, R]) makeRecord(params P, arrivedAt, landAt time.Time) R {
	r := record[P]{params: params, id: fmt.Sprintf("%s%06d", s.cfg.IDPrefix, len(s.records)+1), landAt: landAt,
		status: gateway.StatusSucceeded}
	if s.cfg.Declines != nil && s.cfg.Declines(params) {
		r.status = gateway.StatusDeclined
	}
	if s.dice.Pending(0) {
		r.final, r.status, r.finalAt = r.status, gateway.StatusPending, landAt.Add(s.cfg.PendingFor)
	}
	s.byID[r.id] = len(s.records)
	s.records = append(s.records, r)
	s.inFlight.Add(arrivedAt, landAt)
	return s.cfg.Make(params, r.id, r.status, landAt)
}

// Inquire returns the effects made for reference, each as it stands; an error wrapping
// gateway.ErrUnsupported when inquiry is off.
func (s *Simulator[P, R]) Inquire(ctx context.Context, reference string) ([]R, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("inquiry not sent: %w", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.settings.inquiry {
		return nil, fmt.Errorf("error inquiring about %q: %w", reference, gateway.ErrUnsupported)
	}
	now := time.Now()
	found := []R{}
	for _, r := range s.records {
		if ref, _ := s.cfg.Kind.Keys(r.params); ref == reference && r.landed(now) {
			found = append(found, s.at(r, now))
		}
	}
	return found, nil
}

// Get returns the effect with id as it stands now; an error wrapping gateway.ErrNotFound when
// there is none.
func (s *Simulator[P, R]) Get(ctx context.Context, id string) (*R, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("read not sent: %w", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	i, ok := s.byID[id]
	if !ok || !s.records[i].landed(now) {
		return nil, fmt.Errorf("error reading %s %q: %w", s.cfg.Kind.Name, id, gateway.ErrNotFound)
	}
	r := s.at(s.records[i], now)
	return &r, nil
}
