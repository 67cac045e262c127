package libdeps

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goList runs the go command in the library module's root, outside the repository's workspace:
// what a user who requires the module gets.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return strings.Fields(string(out))
}

// The library module requires no CLI library, browser driver, web UI or payment provider SDK:
// those belong to the modules beside it (cmd, gateway/stripe, examples/offline-client, bench).
func TestLibraryModuleRequirements(t *testing.T) {
	t.Parallel()
	modules := goList(t, "-m", "-f", "{{.Path}}", "all")
	require.Contains(t, modules, "github.com/jackc/pgx/v5", "go list -m all lists the module graph")
	for _, m := range modules {
		for _, banned := range []string{
			"github.com/spf13/cobra",
			"github.com/chromedp/",
			"riverqueue.com/riverui",
			"github.com/stripe/stripe-go",
			"github.com/getkin/kin-openapi",
		} {
			require.False(t, strings.HasPrefix(m, banned), "the library module's graph holds %s", m)
		}
	}
}

// The engine's packages import no metrics client (saga/sagaprom feeds Prometheus), and
// OpenTelemetry's API only: the SDK, its exporters and instrumentation of other libraries belong
// to the program that chooses them (the CLI). The worker's River instrumentation (otelriver) is
// API-only too.
func TestEngineImports(t *testing.T) {
	t.Parallel()
	deps := goList(t, "-deps", "-f", "{{.ImportPath}}", "./saga", "./phases", "./gateway")
	require.Contains(t, deps, "go.opentelemetry.io/otel/trace", "go list -deps lists the imports")
	for _, dep := range deps {
		for _, banned := range []string{
			"github.com/prometheus/",
			"go.opentelemetry.io/otel/sdk",
			"go.opentelemetry.io/otel/exporters/",
			"go.opentelemetry.io/contrib/",
			"go.opentelemetry.io/proto/",
			"github.com/exaring/otelpgx",
		} {
			require.False(t, strings.HasPrefix(dep, banned), "the engine depends on %s", dep)
		}
	}
	for _, dep := range goList(t, "-deps", "-f", "{{.ImportPath}}", "./worker") {
		for _, banned := range []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters/"} {
			require.False(t, strings.HasPrefix(dep, banned), "the worker depends on %s", dep)
		}
	}
}
