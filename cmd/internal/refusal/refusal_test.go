package refusal_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/internal/refusal"
)

// Every refusal is counted; the log gets Burst lines at once, then one per Every, and the next
// line says how many it left out.
func TestRecorderCountsEveryRefusalAndLogsAtARate(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	now := time.Unix(1000, 0)
	reg := prometheus.NewRegistry()
	r, err := refusal.New(&refusal.Config{Logger: slog.New(slog.NewTextHandler(&log, nil)), Registerer: reg,
		Burst: 3, Every: time.Second, Now: func() time.Time { return now }})
	require.NoError(t, err)
	for range 50 {
		r.Refused(t.Context(), "api", "invalid_key", "203.0.113.9", "path", "/invoices")
	}
	require.Equal(t, 3, strings.Count(log.String(), "authentication refused"), log.String())
	now = now.Add(1500 * time.Millisecond)
	r.Refused(t.Context(), "webhook", "invalid_signature", "203.0.113.9")
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 4)
	require.Contains(t, lines[3], "unlogged_before=47")
	require.Contains(t, lines[0], "surface=api reason=invalid_key client=203.0.113.9 path=/invoices")

	count, err := testutil.GatherAndCount(reg, refusal.MetricName)
	require.NoError(t, err)
	require.Equal(t, 2, count, "one series per surface and reason")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pgsaga_auth_failures_total Refused authentications, by surface (api, webhook, console) and reason.
# TYPE pgsaga_auth_failures_total counter
pgsaga_auth_failures_total{reason="invalid_key",surface="api"} 50
pgsaga_auth_failures_total{reason="invalid_signature",surface="webhook"} 1
`), refusal.MetricName))

	// A second recorder on the same registry shares the counter.
	again, err := refusal.New(&refusal.Config{Registerer: reg})
	require.NoError(t, err)
	again.Refused(t.Context(), "api", "invalid_key", "x")
	require.Equal(t, 51.0, testutil.ToFloat64(prometheusCounter(t, reg)))
}

func prometheusCounter(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: refusal.MetricName,
		Help: "Refused authentications, by surface (api, webhook, console) and reason."}, []string{"surface", "reason"})
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &already)
	return already.ExistingCollector.(*prometheus.CounterVec).WithLabelValues("api", "invalid_key")
}
