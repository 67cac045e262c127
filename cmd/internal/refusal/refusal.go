// Package refusal makes refused authentications visible: serve's API keys and webhook
// signatures, the console's sign-ins. Each refusal is counted in
// pgsaga_auth_failures_total{surface,reason} and logged with the client's address, at most
// Burst lines at once and one more per Every after that, so that a guessing run is seen without
// flooding the log; a line after a quiet spell says how many refusals went unlogged since the
// last one. Nothing secret is ever logged: a caller passes the reason and the client, never
// the token, key or signature it refused.
package refusal

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MetricName is the counter of refused authentications.
const MetricName = "pgsaga_auth_failures_total"

// Config configures a Recorder.
type Config struct {
	// Logger receives one line per logged refusal, at warn. Defaults to discarding.
	Logger *slog.Logger
	// Registerer receives the counter. Defaults to none: refusals are only logged.
	Registerer prometheus.Registerer
	// Burst is how many refusals are logged at once before the rate applies. Defaults to 30.
	Burst int
	// Every is the rate of logged refusals beyond Burst: one per Every. Defaults to 1s.
	Every time.Duration
	// Now is the clock of the rate. Defaults to time.Now.
	Now func() time.Time
}

// Recorder counts and logs refused authentications. It is safe for concurrent use; a nil
// *Recorder records nothing.
type Recorder struct {
	logger *slog.Logger
	count  *prometheus.CounterVec
	burst  float64
	every  time.Duration
	now    func() time.Time

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

// New returns a Recorder, registering its counter with cfg.Registerer (a counter registered
// before by another Recorder is shared).
func New(cfg *Config) (*Recorder, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Burst <= 0 {
		c.Burst = 30
	}
	if c.Every <= 0 {
		c.Every = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	count := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricName,
		Help: "Refused authentications, by surface (api, webhook, console) and reason.",
	}, []string{"surface", "reason"})
	if c.Registerer != nil {
		if err := c.Registerer.Register(count); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return nil, err
			}
			count = already.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return &Recorder{logger: c.Logger, count: count, burst: float64(c.Burst), every: c.Every, now: c.Now,
		tokens: float64(c.Burst)}, nil
}

// Refused records one refusal on surface (api, webhook, console) for reason, a value from a
// small fixed set (it is a label), from client, the request's address. attrs are more
// attributes for the log line: never a secret.
func (r *Recorder) Refused(ctx context.Context, surface, reason, client string, attrs ...any) {
	if r == nil {
		return
	}
	r.count.WithLabelValues(surface, reason).Inc()
	suppressed, ok := r.take()
	if !ok {
		return
	}
	line := append([]any{"surface", surface, "reason", reason, "client", client}, attrs...)
	if suppressed > 0 {
		line = append(line, "unlogged_before", suppressed)
	}
	r.logger.WarnContext(ctx, "authentication refused", line...)
}

// take spends a token of the rate, and reports how many refusals went unlogged before this one.
func (r *Recorder) take() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.last.IsZero() {
		r.tokens = min(r.burst, r.tokens+float64(now.Sub(r.last))/float64(r.every))
	}
	r.last = now
	if r.tokens < 1 {
		r.suppressed++
		return 0, false
	}
	r.tokens--
	suppressed := r.suppressed
	r.suppressed = 0
	return suppressed, true
}
