package usermodule

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// libraryRoot is the library module's directory, from this package's.
const libraryRoot = "../../.."

// newUserModule makes an empty module of a user's outside the repository, requiring the library
// at root through a replace directive, with the library's go.sum.
func newUserModule(t *testing.T, root string) string {
	t.Helper()
	user := t.TempDir()
	module := "module example.com/user\n\ngo 1.26.0\n\nrequire github.com/pgsaga/pgsaga v0.0.0\n\n" +
		"replace github.com/pgsaga/pgsaga => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(user, "go.mod"), []byte(module), 0o644))
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(user, "go.sum"), sums, 0o644))
	return user
}

// goIn runs the go tool in the user's module dir. The library's own go.work does not reach it;
// every module comes from the local cache, as the library's own build left it.
func goIn(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	return cmd.CombinedOutput()
}
