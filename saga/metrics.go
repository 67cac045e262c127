package saga

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgsaga/pgsaga/internal/promreg"
)

// Request outcomes, the values of the "outcome" label.
const (
	outcomeExecuted    = "executed"
	outcomeReplayed    = "replayed"
	outcomeInProgress  = "in_progress"
	outcomeMismatch    = "mismatch"
	outcomeRejected    = "rejected"
	outcomeUnavailable = "unavailable"
	outcomeParked      = "parked"
)

// metrics are pgsaga's Prometheus collectors; a nil *metrics records nothing.
type metrics struct {
	requests *prometheus.CounterVec
	resumes  *prometheus.CounterVec
	parks    *prometheus.CounterVec
	steps    *prometheus.HistogramVec
	calls    *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgsaga_requests_total",
			Help: "Requests by operation and outcome (executed, replayed, in_progress, mismatch, rejected, unavailable, parked).",
		}, []string{"operation", "outcome"}),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgsaga_resumes_total",
			Help: "Executions that continued a key from its recovery point (retries after a crash, the worker, operators).",
		}, []string{"operation"}),
		parks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgsaga_parked_total",
			Help: "Keys parked as failed for an operator.",
		}, []string{"operation"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pgsaga_step_duration_seconds",
			Help:    "Duration of each atomic phase and external call.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"operation", "step"}),
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pgsaga_gateway_call_duration_seconds",
			Help:    "Duration of each gateway call attempt, by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"operation", "outcome"}),
	}
	// Two clients on one registry (serve with an in-process worker) share the collectors.
	var err error
	if m.requests, err = promreg.Register(reg, m.requests); err != nil {
		return nil, err
	}
	if m.resumes, err = promreg.Register(reg, m.resumes); err != nil {
		return nil, err
	}
	if m.parks, err = promreg.Register(reg, m.parks); err != nil {
		return nil, err
	}
	if m.steps, err = promreg.Register(reg, m.steps); err != nil {
		return nil, err
	}
	if m.calls, err = promreg.Register(reg, m.calls); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) request(op, outcome string) {
	if m != nil {
		m.requests.WithLabelValues(op, outcome).Inc()
	}
}

func (m *metrics) resume(op string) {
	if m != nil {
		m.resumes.WithLabelValues(op).Inc()
	}
}

func (m *metrics) parked(op string) {
	if m != nil {
		m.parks.WithLabelValues(op).Inc()
	}
}

func (m *metrics) step(op, step string, d time.Duration) {
	if m != nil {
		m.steps.WithLabelValues(op, step).Observe(d.Seconds())
	}
}

// ObserveGatewayCall records one gateway call attempt's latency and outcome for an operation.
// Adapters' hooks (gateway.ExecuteOpts.OnAttempt) call it.
func (c *Client) ObserveGatewayCall(operation, outcome string, d time.Duration) {
	if c.metrics != nil {
		c.metrics.calls.WithLabelValues(operation, outcome).Observe(d.Seconds())
	}
}
