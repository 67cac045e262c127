package worker_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
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
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}, Registerer: reg})
	require.NoError(t, reg.Register(worker.NewStateCollector(c)))
	startWorker(t, &worker.Config{Pool: db.Pool, Client: c, Registerer: reg})

	waitFor(t, "three completed resume jobs", 20*time.Second, func() bool {
		return gather(t, reg, "pgsaga_worker_resume_jobs_total")["pgsaga_worker_resume_jobs_total{result=completed}"] == 3
	})
	_, err := db.Pool.Exec(t.Context(), `ANALYZE pgsaga_key`) // refreshes the completed estimate
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
