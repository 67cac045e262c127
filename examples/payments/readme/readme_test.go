package readme_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeShowsThisFile keeps the payment flow of docs/payment-flow.md compiled: its Go block must be
// flow.go's lines between "// README begin" and "// README end", one tab of indent removed.
func TestReadmeShowsThisFile(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("flow.go")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(src), "// README begin\n")
	require.True(t, ok)
	region, _, ok := strings.Cut(after, "\t// README end\n")
	require.True(t, ok)
	var want strings.Builder
	for _, line := range strings.SplitAfter(region, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}

	readme, err := os.ReadFile("../../../docs/payment-flow.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(readme), "<!-- compiled from examples/payments/readme/flow.go -->\n```go\n")
	require.True(t, ok, "the payment flow block of docs/payment-flow.md is marked")
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok)
	require.Equal(t, want.String(), block, "the payment flow of docs/payment-flow.md must be flow.go's (edit flow.go, then copy it)")
}
