package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestIntoSharesTheCollectorRegisteredFirst(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	newCounter := func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"l"})
	}
	first, second := newCounter(), newCounter()
	require.NoError(t, Into(reg, &first))
	kept := second
	require.NoError(t, Into(reg, &second))
	require.Same(t, first, second, "the second component counts on the first one's collector")
	require.NotSame(t, kept, second)

	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "x"})
	require.Error(t, Into(reg, &gauge), "another kind of collector under the same name")
}
