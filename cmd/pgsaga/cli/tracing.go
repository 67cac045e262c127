package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The OpenTelemetry environment variables that decide whether and where the commands that run
// operations (serve, worker, resume, settle, console) export spans. They are read through
// Env.Getenv; the SDK reads the others it knows (OTEL_TRACES_SAMPLER, OTEL_BSP_*, the OTLP
// exporter's timeout, compression and certificates) from the process's environment itself.
const (
	envSDKDisabled        = "OTEL_SDK_DISABLED"
	envTracesExporter     = "OTEL_TRACES_EXPORTER"
	envOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envOTLPProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envOTLPHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envOTLPTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	envServiceName        = "OTEL_SERVICE_NAME"
	envResourceAttributes = "OTEL_RESOURCE_ATTRIBUTES"
)

// defaultOTLPTracesURL is where spans go when tracing is on and no endpoint is set: a collector
// (or Jaeger) on this host, OTLP over HTTP on its standard port.
const defaultOTLPTracesURL = "http://localhost:4318/v1/traces"

// tracingFlushTimeout bounds the export of the spans still buffered when a command ends.
const tracingFlushTimeout = 5 * time.Second

// tracing is a command's OpenTelemetry tracing. A nil *tracing is tracing off: its methods give
// nothing to trace with, and the engine spends nothing on it.
type tracing struct {
	provider *sdktrace.TracerProvider
}

// startTracing turns tracing on for the command cmd when the environment asks for it
// (OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set), exporting spans by OTLP over HTTP in
// batches, and returns nil when it does not. The command calls shutdown when it ends, which
// exports what is left. Export failures are logged on logger, never printed otherwise.
func (c *cli) startTracing(ctx context.Context, command string, logger *slog.Logger) (*tracing, error) {
	on, err := tracingWanted(c.env.Getenv)
	if err != nil || !on {
		return nil, err
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(otlpTracesURL(c.env.Getenv))}
	headers, err := keyValues(c.env.Getenv, envOTLPTracesHeaders, envOTLPHeaders)
	if err != nil {
		return nil, err
	}
	if len(headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(headers))
	}
	exporter, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating the OTLP trace exporter: %w", err)
	}
	res, err := c.tracingResource(ctx, command)
	if err != nil {
		return nil, err
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(&loggingExporter{SpanExporter: exporter, logger: logger}),
		sdktrace.WithResource(res),
	)
	t := &tracing{provider: provider}
	c.tracing = t
	return t, nil
}

// tracingWanted reports whether getenv asks for spans, and refuses what pgsaga cannot export.
func tracingWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") {
		return false, nil
	}
	switch exporter := strings.TrimSpace(getenv(envTracesExporter)); exporter {
	case "none":
		return false, nil
	case "":
		if strings.TrimSpace(getenv(envOTLPEndpoint)) == "" && strings.TrimSpace(getenv(envOTLPTracesEndpoint)) == "" {
			return false, nil
		}
	case "otlp":
	default:
		return false, usageErrorf("%s=%s is not supported: set otlp (OTLP over HTTP) or none", envTracesExporter, exporter)
	}
	switch protocol := firstSet(getenv, envOTLPTracesProtocol, envOTLPProtocol); protocol {
	case "", "http/protobuf", "http/json":
	default:
		return false, usageErrorf("OTLP protocol %q is not supported: spans are exported over HTTP (http/protobuf)", protocol)
	}
	return true, nil
}

// otlpTracesURL is where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces, else a collector on this host.
func otlpTracesURL(getenv func(string) string) string {
	if u := strings.TrimSpace(getenv(envOTLPTracesEndpoint)); u != "" {
		return u
	}
	if u := strings.TrimSpace(getenv(envOTLPEndpoint)); u != "" {
		return strings.TrimRight(u, "/") + "/v1/traces"
	}
	return defaultOTLPTracesURL
}

// tracingResource describes this process in its spans: service.name (OTEL_SERVICE_NAME, else the
// application's name), OTEL_RESOURCE_ATTRIBUTES, the host, the SDK, and pgsaga.command.
func (c *cli) tracingResource(ctx context.Context, command string) (*resource.Resource, error) {
	attrs, err := keyValues(c.env.Getenv, envResourceAttributes)
	if err != nil {
		return nil, err
	}
	kvs := []attribute.KeyValue{semconv.ServiceName(c.app.Name), attribute.String("pgsaga.command", command)}
	for k, v := range attrs {
		kvs = append(kvs, attribute.String(k, v))
	}
	if name := strings.TrimSpace(c.env.Getenv(envServiceName)); name != "" {
		kvs = append(kvs, semconv.ServiceName(name))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithSchemaURL(semconv.SchemaURL), resource.WithAttributes(kvs...))
	if err != nil {
		return nil, fmt.Errorf("error describing this process for tracing: %w", err)
	}
	return res, nil
}

// keyValues parses the first of names that is set: "key=value,key=value" (W3C baggage's form:
// values percent-encoded).
func keyValues(getenv func(string) string, names ...string) (map[string]string, error) {
	var name, value string
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			name, value = n, v
			break
		}
	}
	out := map[string]string{}
	if value == "" {
		return out, nil
	}
	for _, pair := range strings.Split(value, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, usageErrorf("invalid %s: want key=value pairs separated by commas", name)
		}
		decoded, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, usageErrorf("invalid %s: the value of %q is not percent-encoded", name, k)
		}
		out[k] = decoded
	}
	return out, nil
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// tracerProvider is what the engine traces with: nil when tracing is off.
func (t *tracing) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// handler wraps an API handler in an HTTP server span (otelhttp) that continues an incoming W3C
// traceparent; off, it is the handler itself.
func (t *tracing) handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return otelhttp.NewHandler(h, "pgsaga",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))
}

// pgxTracer traces a pool's statements (otelpgx) under the span that runs them; statements
// run under no span (River's polling, the sweep) make none. Off, it is nil.
func (t *tracing) pgxTracer() pgx.QueryTracer {
	if t == nil {
		return nil
	}
	return otelpgx.NewTracer(otelpgx.WithTracerProvider(t.provider),
		otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()))
}

// shutdown exports the spans still buffered (within tracingFlushTimeout) and stops.
func (t *tracing) shutdown() {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	_ = t.provider.Shutdown(ctx)
}

// loggingExporter logs the batches its exporter could not send: a collector that is away costs
// those spans, never the command its output or its exit status.
type loggingExporter struct {
	sdktrace.SpanExporter
	logger *slog.Logger
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.logger.WarnContext(ctx, "could not export spans", "spans", len(spans), "error", err)
	}
	return nil
}
