package worker_test

import (
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The wiring example is a main a user can copy: it imports nothing a module outside this one
// could not.
func TestWiringExampleImportsNothingInternal(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "example_wiring_test.go", nil, parser.ImportsOnly)
	require.NoError(t, err)
	require.NotEmpty(t, f.Imports)
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		require.NoError(t, err)
		require.False(t, strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal"), path)
	}
}
