package saga

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgsaga/pgsaga/internal/promreg"
	"github.com/pgsaga/pgsaga/phases"
)

// RequestOutcome is how a request was answered, for metrics.
type RequestOutcome string

// Request outcomes, the values of pgsaga_requests_total's "outcome" label.
const (
	OutcomeExecuted    RequestOutcome = "executed"    // this request's execution produced the answer
	OutcomeReplayed    RequestOutcome = "replayed"    // a stored answer, nothing executed
	OutcomeInProgress  RequestOutcome = "in_progress" // 409: another execution holds the key
	OutcomeMismatch    RequestOutcome = "mismatch"    // 422: the key was used for another request
	OutcomeRejected    RequestOutcome = "rejected"    // 400/401/413: refused before anything was stored
	OutcomeUnavailable RequestOutcome = "unavailable" // 503: transient, the key stays started
	OutcomeParked      RequestOutcome = "parked"      // 503: the key is (or was just) parked
	OutcomeError       RequestOutcome = "error"       // 500: a failure the engine cannot classify
)

// requestOutcome classifies what Run or RunTx returned, by behaviour, as the HTTP handler
// answers it: the one place a request's outcome is decided for metrics.
func requestOutcome(res *Result, err error) RequestOutcome {
	switch {
	case err != nil:
		return errorOutcome(err)
	case res.Replayed:
		return OutcomeReplayed
	}
	return OutcomeExecuted
}

// errorOutcome is requestOutcome for an error (apart, so that an answer allocates nothing).
func errorOutcome(err error) RequestOutcome {
	var (
		inProgress *InProgressError
		parked     *ParkedError
		invalid    *InvalidRequestError
		temporary  *TransientError
	)
	switch {
	case errors.Is(err, ErrKeyReused):
		return OutcomeMismatch
	case errors.As(err, &inProgress):
		return OutcomeInProgress
	case errors.As(err, &parked):
		return OutcomeParked
	case errors.Is(err, ErrInvalidJSON), errors.As(err, &invalid):
		return OutcomeRejected
	case errors.As(err, &temporary):
		return OutcomeUnavailable
	}
	return OutcomeError
}

// observed reports a request's outcome to the observer, once, where Run and RunTx return it.
func (c *Client) observed(operation string, res *Result, err error) (*Result, error) {
	c.observer.Request(operation, requestOutcome(res, err))
	return res, err
}

// Observer receives what the engine does, for metrics. Calls are made on the request path:
// implementations must be safe for concurrent use and cheap.
type Observer interface {
	// Request is called once per request (Run, RunTx, the handler's refusals before Run) with
	// its outcome. Resumes by the worker or an operator are not requests (see Resumed).
	Request(operation string, outcome RequestOutcome)
	// Step is called after each atomic phase and external call with its duration.
	Step(operation, step string, d time.Duration)
	// Call is called after each external call attempt with its outcome class.
	Call(operation, step string, outcome phases.CallOutcome, d time.Duration)
	// Resumed is called when an execution continues a key from its recovery point.
	Resumed(operation string)
	// Parked is called when a key is parked, with the reason.
	Parked(operation string, reason ParkedReason)
}

type nopObserver struct{}

func (nopObserver) Request(string, RequestOutcome)                         {}
func (nopObserver) Step(string, string, time.Duration)                     {}
func (nopObserver) Call(string, string, phases.CallOutcome, time.Duration) {}
func (nopObserver) Resumed(string)                                         {}
func (nopObserver) Parked(string, ParkedReason)                            {}

// prometheusObserver is the Observer behind Config.Registerer.
type prometheusObserver struct {
	requests *prometheus.CounterVec
	resumes  *prometheus.CounterVec
	parks    *prometheus.CounterVec
	steps    *prometheus.HistogramVec
	calls    *prometheus.HistogramVec
}

// NewPrometheusObserver registers pgsaga's metrics on reg and returns the Observer that feeds
// them: pgsaga_requests_total{operation,outcome}, pgsaga_resumes_total{operation},
// pgsaga_parked_total{operation,reason}, pgsaga_step_duration_seconds{operation,step} and
// pgsaga_call_duration_seconds{operation,step,outcome} (outcome is the call's outcome class).
// Two clients on one registry share the collectors.
func NewPrometheusObserver(reg prometheus.Registerer) (Observer, error) {
	buckets := prometheus.ExponentialBuckets(0.0005, 2, 16)
	o := &prometheusObserver{
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
	var err error
	if o.requests, err = promreg.Register(reg, o.requests); err != nil {
		return nil, err
	}
	if o.resumes, err = promreg.Register(reg, o.resumes); err != nil {
		return nil, err
	}
	if o.parks, err = promreg.Register(reg, o.parks); err != nil {
		return nil, err
	}
	if o.steps, err = promreg.Register(reg, o.steps); err != nil {
		return nil, err
	}
	if o.calls, err = promreg.Register(reg, o.calls); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *prometheusObserver) Request(op string, outcome RequestOutcome) {
	o.requests.WithLabelValues(op, string(outcome)).Inc()
}

func (o *prometheusObserver) Step(op, step string, d time.Duration) {
	o.steps.WithLabelValues(op, step).Observe(d.Seconds())
}

func (o *prometheusObserver) Call(op, step string, outcome phases.CallOutcome, d time.Duration) {
	o.calls.WithLabelValues(op, step, string(outcome)).Observe(d.Seconds())
}

func (o *prometheusObserver) Resumed(op string) { o.resumes.WithLabelValues(op).Inc() }

func (o *prometheusObserver) Parked(op string, reason ParkedReason) {
	o.parks.WithLabelValues(op, string(reason)).Inc()
}
