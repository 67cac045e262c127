// Package sagaprom gives pgsaga's engine Prometheus metrics: an Observer for saga.Config that
// counts requests by outcome, resumes and parked keys by reason, and times steps and external
// calls by outcome class. It lives apart from package saga so that importing the engine brings no
// metrics client.
package sagaprom

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgsaga/pgsaga/internal/promreg"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// observer feeds pgsaga's Prometheus metrics.
type observer struct {
	requests *prometheus.CounterVec
	resumes  *prometheus.CounterVec
	parks    *prometheus.CounterVec
	steps    *prometheus.HistogramVec
	calls    *prometheus.HistogramVec
}

// NewObserver registers pgsaga's metrics on reg and returns the Observer that feeds
// them: pgsaga_requests_total{operation,outcome}, pgsaga_resumes_total{operation},
// pgsaga_parked_total{operation,reason}, pgsaga_step_duration_seconds{operation,step} and
// pgsaga_call_duration_seconds{operation,step,outcome} (outcome is the call's outcome class).
// Two clients on one registry share the collectors.
func NewObserver(reg prometheus.Registerer) (saga.Observer, error) {
	buckets := prometheus.ExponentialBuckets(0.0005, 2, 16)
	o := &observer{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgsaga_requests_total",
			Help: "Requests by operation and outcome (executed, replayed, in_progress, mismatch, rejected, unavailable, parked, error).",
		}, []string{"operation", "outcome"}),
		resumes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgsaga_resumes_total",
			Help: "Executions that continued a key from its recovery point (retries after a crash, the worker, operators).",
		}, []string{"operation"}),
		parks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pgsaga_parked_total",
			Help: "Keys parked for an operator, by reason (attempts_exhausted, permanent, outcome_unknown).",
		}, []string{"operation", "reason"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pgsaga_step_duration_seconds", Help: "Duration of each atomic phase and external call.", Buckets: buckets,
		}, []string{"operation", "step"}),
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pgsaga_call_duration_seconds",
			Help:    "Duration of each external call attempt, by outcome class (succeeded, declined, failed_before, pending, unknown).",
			Buckets: buckets,
		}, []string{"operation", "step", "outcome"}),
	}
	if err := errors.Join(
		promreg.Into(reg, &o.requests),
		promreg.Into(reg, &o.resumes),
		promreg.Into(reg, &o.parks),
		promreg.Into(reg, &o.steps),
		promreg.Into(reg, &o.calls),
	); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *observer) Request(op string, outcome saga.RequestOutcome) {
	o.requests.WithLabelValues(op, string(outcome)).Inc()
}

func (o *observer) Step(op, step string, d time.Duration) {
	o.steps.WithLabelValues(op, step).Observe(d.Seconds())
}

func (o *observer) Call(op, step string, outcome phases.CallOutcome, d time.Duration) {
	o.calls.WithLabelValues(op, step, string(outcome)).Observe(d.Seconds())
}

func (o *observer) Resumed(op string) { o.resumes.WithLabelValues(op).Inc() }

func (o *observer) Parked(op string, reason saga.ParkedReason) {
	o.parks.WithLabelValues(op, string(reason)).Inc()
}
