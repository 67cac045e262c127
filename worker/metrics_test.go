package worker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagaprom"
	"github.com/pgsaga/pgsaga/worker"
)

// gather returns every sample of the named metrics as "name{label=value,...}" → value.
func gather(t testing.TB, g prometheus.Gatherer, names ...string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if len(names) > 0 && !contains(names, mf.GetName()) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStateCollectorCountsKeysByState(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	seedAged(t, db.Pool, "expired", "started", 2, time.Minute, 0) // lease expired a minute ago: stuck
	seedAged(t, db.Pool, "live", "started", 1, time.Minute, 0)
	_, err := db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET locked_until = now() + interval '1 minute' WHERE key LIKE 'live-%'`)
	require.NoError(t, err)
	seedAged(t, db.Pool, "done", "completed", 4, time.Minute, time.Hour)
	seedAged(t, db.Pool, "parked", "failed", 1, time.Minute, 0)

	// Completed keys are estimated from the planner's statistics, which ANALYZE refreshes.
	_, err = db.Pool.Exec(t.Context(), `ANALYZE pgsaga_key`)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(worker.NewStateCollector(newClient(t, db.Pool, &saga.Config{}))))
	require.Equal(t, map[string]float64{
		"pgsaga_keys{state=completed}": 4,
		"pgsaga_keys{state=failed}":    1,
		"pgsaga_keys{state=started}":   3,
		"pgsaga_keys_stuck{}":          3,
	}, gather(t, reg))

	// A database that cannot be read reports an error, not stale numbers.
	closed := dbtest.NewDB(t)
	closed.Pool.Close()
	broken := prometheus.NewRegistry()
	require.NoError(t, broken.Register(worker.NewStateCollector(newClient(t, closed.Pool, &saga.Config{}))))
	_, err = broken.Gather()
	require.Error(t, err)
}

// The worker registers its counters and the state gauges; a registry that already has the
// state collector (serve registers it before starting an in-process worker) is fine.
func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	seedCrashed(t, db.Pool, "crashed", 3)
	reg := prometheus.NewRegistry()
	eff := newEffects()
	observer, err := sagaprom.NewObserver(reg)
	require.NoError(t, err)
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}, Observer: observer})
	// Read on every scrape: the test looks at the gauges right after the keys change.
	require.NoError(t, reg.Register(worker.NewStateCollectorWith(c, -1, time.Now)))
	startWorker(t, &worker.Config{Pool: db.Pool, Client: c, Registerer: reg})

	waitFor(t, "three completed resume jobs", 20*time.Second, func() bool {
		return gather(t, reg, "pgsaga_worker_resume_jobs_total")["pgsaga_worker_resume_jobs_total{result=completed}"] == 3
	})
	_, err = db.Pool.Exec(t.Context(), `ANALYZE pgsaga_key`) // refreshes the completed estimate
	require.NoError(t, err)
	got := gather(t, reg)
	require.Equal(t, float64(3), got["pgsaga_resumes_total{operation=effect}"])
	require.Zero(t, got["pgsaga_keys{state=started}"])
	require.Equal(t, float64(3), got["pgsaga_keys{state=completed}"])
	require.Zero(t, got["pgsaga_keys_stuck{}"])
	require.Positive(t, got["pgsaga_worker_sweeps_total{result=ok}"])

	// A second worker on the same registry shares the collectors.
	_, err = worker.New(&worker.Config{Pool: db.Pool, Client: c, Registerer: reg})
	require.NoError(t, err)
}

// A burst of concurrent scrapes costs one query: the first reads, the others wait for it and
// share its result, and later scrapes reuse it until MaxAge has passed. A failed read is kept as
// long, and reported as an error.
func TestStateCollectorScrapeStormCostsOneQuery(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	seedAged(t, db.Pool, "parked", "failed", 2, time.Minute, 0)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	queries := &queryCounter{}
	cfg.ConnConfig.Tracer = queries
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	var (
		mu  sync.Mutex
		now = time.Now()
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(worker.NewStateCollectorWith(newClient(t, pool, &saga.Config{}),
		10*time.Second, clock)))
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})

	scrapes := func(n int) {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
				assert.Equal(t, http.StatusOK, rec.Code)
				assert.Contains(t, rec.Body.String(), `pgsaga_keys{state="failed"} 2`)
			})
		}
		wg.Wait()
	}
	scrapes(50)
	require.Equal(t, int64(1), queries.n.Load(), "50 concurrent scrapes, one query")
	scrapes(10)
	require.Equal(t, int64(1), queries.n.Load(), "within MaxAge the read is reused")

	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	scrapes(20)
	require.Equal(t, int64(2), queries.n.Load(), "after MaxAge one new read")

	pool.Close() // every read fails from here
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	for range 5 {
		_, err := reg.Gather()
		require.Error(t, err, "a failed read is an error, not the last numbers")
	}
}

// queryCounter counts the queries sent on a pool.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
