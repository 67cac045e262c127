package saga_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The engine's packages take a TracerProvider and import OpenTelemetry's API only: the SDK, its
// exporters and instrumentation of other libraries belong to the program that chooses them (the
// CLI). The worker's River instrumentation (otelriver) is API-only too.
func TestEngineImportsOnlyTheOpenTelemetryAPI(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".", "../phases", "../recovery", "../worker").CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "go.opentelemetry.io/otel/trace", "go list -deps lists the imports")
	for _, dep := range deps {
		for _, banned := range []string{
			"go.opentelemetry.io/otel/sdk",
			"go.opentelemetry.io/otel/exporters/",
			"go.opentelemetry.io/contrib/",
			"go.opentelemetry.io/proto/",
			"github.com/exaring/otelpgx",
		} {
			require.False(t, strings.HasPrefix(dep, banned), "the engine depends on %s", dep)
		}
	}
}
