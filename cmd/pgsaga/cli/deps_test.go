package cli_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The cli package is what an application embeds: operator tools only. It must not bring the
// example service, the gateway simulator or the test PostgreSQL launcher into a user's binary
// (the pgsaga binary adds those itself, in package main).
func TestOperatorOnlyImports(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/pgsaga/pgsaga/saga", "go list -deps lists the imports")
	for _, dep := range deps {
		for _, banned := range []string{
			"github.com/pgsaga/pgsaga/examples/",
			"github.com/pgsaga/pgsaga/gateway/sim",
			"github.com/pgsaga/pgsaga/internal/testkit/pglocal",
		} {
			require.False(t, strings.HasPrefix(dep, banned), "package cli depends on %s", dep)
		}
	}
}
