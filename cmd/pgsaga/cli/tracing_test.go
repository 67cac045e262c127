package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTracingFromTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
		url  string
		err  string
	}{
		{name: "nothing set: off", env: nil},
		{name: "exporter otlp, no endpoint: a local collector", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			on: true, url: "http://localhost:4318/v1/traces"},
		{name: "an endpoint alone turns it on", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			on: true, url: "http://collector:4318/v1/traces"},
		{name: "the traces endpoint is used as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom"}, on: true, url: "https://b/custom"},
		{name: "exporter none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318"}},
		{name: "the SDK disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{name: "another exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER=zipkin is not supported"},
		{name: "gRPC", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			err: `OTLP protocol "grpc" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(name string) string { return tc.env[name] }
			on, err := tracingWanted(getenv)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, ExitUsage, exitCode(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.on, on)
			if on {
				require.Equal(t, tc.url, otlpTracesURL(getenv))
			}
		})
	}
}

func TestTracingKeyValues(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":        "a=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key = s%20ecret , x=y",
		"OTEL_RESOURCE_ATTRIBUTES":          "deployment.environment=prod,broken",
	}
	getenv := func(name string) string { return env[name] }
	got, err := keyValues(getenv, envOTLPTracesHeaders, envOTLPHeaders)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"api-key": "s ecret", "x": "y"}, got, "the traces variable wins, values decoded")
	_, err = keyValues(getenv, envResourceAttributes)
	require.ErrorContains(t, err, "invalid OTEL_RESOURCE_ATTRIBUTES")
}

// A command that runs operations refuses an exporter it cannot serve, as bad usage, before it
// touches the database.
func TestTracingBadExporterIsBadUsage(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	env := map[string]string{"OTEL_TRACES_EXPORTER": "jaeger", "DATABASE_URL": "postgres://nowhere.invalid/db"}
	code := Run(context.Background(), nil, []string{"settle", "--tenant", "t", "--actor", "a", "--outcome", "failed", "--note", "n", "key-12345678"},
		&Env{Stderr: &stderr, Getenv: func(name string) string { return env[name] }})
	require.Equal(t, ExitUsage, code, stderr.String())
	require.Equal(t, "pgsaga settle: OTEL_TRACES_EXPORTER=jaeger is not supported: set otlp (OTLP over HTTP) or none (see pgsaga settle --help)\n", stderr.String())
}
