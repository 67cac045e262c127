package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgsaga/pgsaga/internal/promreg"
	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/saga"
)

// metrics are the worker's counters; a nil *metrics records nothing.
type metrics struct {
	sweeps     *prometheus.CounterVec
	resumes    *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	gcDeleted  prometheus.Counter
	reconciles *prometheus.CounterVec
	unmatched  prometheus.Gauge
}

// counterByResult is a counter of what the worker did, by its "result" label.
func counterByResult(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"result"})
}

// newMetrics registers the worker's collectors on reg.
func newMetrics(reg prometheus.Registerer, client *saga.Client) (*metrics, error) {
	m := &metrics{
		sweeps: counterByResult("pgsaga_worker_sweeps_total",
			"Sweeps for due keys, by result (ok, error)."),
		resumes: counterByResult("pgsaga_worker_resume_jobs_total",
			"Keys worked by resume jobs, one per key, by result (completed, rescheduled, parked, superseded, skipped; error: a job whose claim failed)."),
		deliveries: counterByResult("pgsaga_outbox_deliveries_total",
			"Outbox delivery attempts, by result (delivered, error)."),
		gcDeleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pgsaga_gc_deleted_keys_total",
			Help: "Completed keys deleted by retention GC.",
		}),
		reconciles: counterByResult("pgsaga_reconcile_runs_total",
			"Reconciliations of the provider's charges, by result (ok, error)."),
		unmatched: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pgsaga_unmatched_charges",
			Help: "Charges at the provider that no key accounts for, as the last reconciliation stored them (pgsaga_unmatched_charge).",
		}),
	}
	if err := errors.Join(
		promreg.Into(reg, &m.sweeps),
		promreg.Into(reg, &m.resumes),
		promreg.Into(reg, &m.deliveries),
		promreg.Into(reg, &m.gcDeleted),
		promreg.Into(reg, &m.reconciles),
		promreg.Into(reg, &m.unmatched),
	); err != nil {
		return nil, err
	}
	if _, err := promreg.Register(reg, NewStateCollector(client)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) sweep(err error) {
	if m != nil {
		m.sweeps.WithLabelValues(resultOf(err, "ok")).Inc()
	}
}

func (m *metrics) resume(out resumeOutcome, err error) {
	if m != nil {
		m.resumes.WithLabelValues(resultOf(err, string(out))).Inc()
	}
}

func (m *metrics) delivery(err error) {
	if m != nil {
		m.deliveries.WithLabelValues(resultOf(err, "delivered")).Inc()
	}
}

func (m *metrics) deleted(n int) {
	if m != nil {
		m.gcDeleted.Add(float64(n))
	}
}

// reconciled counts a reconciliation and, when it succeeded, sets the stored unmatched charges.
func (m *metrics) reconciled(stored int, err error) {
	if m == nil {
		return
	}
	m.reconciles.WithLabelValues(resultOf(err, "ok")).Inc()
	if err == nil {
		m.unmatched.Set(float64(stored))
	}
}

func resultOf(err error, ok string) string {
	if err != nil {
		return "error"
	}
	return ok
}

// defaultStateMaxAge is how long the key gauges, once read, answer the scrapes that follow.
const defaultStateMaxAge = 5 * time.Second

// stateCollector reads the key gauges through the read API, at most once per maxAge.
type stateCollector struct {
	client *saga.Client
	maxAge time.Duration
	now    func() time.Time
	keys   *prometheus.Desc
	stuck  *prometheus.Desc

	// mu is held during a read: scrapes that arrive meanwhile wait for its result.
	mu     sync.Mutex
	readAt time.Time
	last   *sibling.KeyEstimate
	err    error
}

// NewStateCollector returns a collector of two gauges: pgsaga_keys{state} counts keys by
// state (started and failed exactly, completed estimated from the planner's statistics), and
// pgsaga_keys_stuck counts keys needing attention: started with an expired lease (not yet
// resumed) or failed (parked for an operator). They come from one query, bounded by a 2s timeout,
// that never counts the whole table. One read answers the scrapes of the next 5s, and scrapes
// that arrive while a read is under way wait for it instead of starting their own, so a scrape
// storm costs one query, not a pooled connection per scrape. A failed read is kept as long and
// reported as an invalid metric, never as stale numbers.
func NewStateCollector(client *saga.Client) prometheus.Collector {
	return newStateCollector(client, defaultStateMaxAge, time.Now)
}

// newStateCollector is NewStateCollector with one read answering the scrapes of maxAge on the
// clock now (negative: a read on every scrape, still one at a time).
func newStateCollector(client *saga.Client, maxAge time.Duration, now func() time.Time) *stateCollector {
	return &stateCollector{
		client: client,
		maxAge: maxAge,
		now:    now,
		keys:   prometheus.NewDesc("pgsaga_keys", "Idempotency keys by state (completed is an estimate).", []string{"state"}, nil),
		stuck:  prometheus.NewDesc("pgsaga_keys_stuck", "Keys started with an expired lease, or parked as failed.", nil, nil),
	}
}

func (s *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.keys
	ch <- s.stuck
}

func (s *stateCollector) Collect(ch chan<- prometheus.Metric) {
	e, err := s.read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(s.keys, err)
		ch <- prometheus.NewInvalidMetric(s.stuck, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(s.keys, prometheus.GaugeValue, float64(e.Started), "started")
	ch <- prometheus.MustNewConstMetric(s.keys, prometheus.GaugeValue, float64(e.CompletedEstimate), "completed")
	ch <- prometheus.MustNewConstMetric(s.keys, prometheus.GaugeValue, float64(e.Parked), "failed")
	ch <- prometheus.MustNewConstMetric(s.stuck, prometheus.GaugeValue, float64(e.Stuck))
}

// read returns the last read when it is younger than maxAge, else reads the database.
func (s *stateCollector) read() (*sibling.KeyEstimate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.readAt.IsZero() && s.now().Sub(s.readAt) < s.maxAge {
		return s.last, s.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.last, s.err = s.client.Internal(sibling.Token{}).KeyEstimate(ctx)
	s.readAt = s.now()
	return s.last, s.err
}
