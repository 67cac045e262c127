package worker

import (
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// jobMiddleware is the middleware of the jobs worth a span when tracing is on (tp set): resumes
// and outbox deliveries, each in a river.work/<kind> span from River's otelriver. A resume's
// pgsaga.resume spans join the trace of the request that claimed each key and link to the job's
// span (package saga). The sweep and retention GC get none: they run every second and every
// minute on an idle system too, and the keys they hand on are traced where they are resumed.
// Off, it is nil, and River runs the jobs as it would without it.
func jobMiddleware(tp trace.TracerProvider) []rivertype.WorkerMiddleware {
	if tp == nil {
		return nil
	}
	return []rivertype.WorkerMiddleware{otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
		TracerProvider: tp,
		// The worker's metrics are Prometheus's (Config.Registerer); otelriver's would go to
		// the process-wide OpenTelemetry meter otherwise.
		MeterProvider:               metricnoop.NewMeterProvider(),
		EnableWorkSpanJobKindSuffix: true,
		EnableTracePropagation:      true,
	})}
}
