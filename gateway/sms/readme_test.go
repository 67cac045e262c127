package sms_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/phases"
)

// order is what the call step of docs/effects.md notifies about.
type order struct{ Phone string }

// notifyShipped is the call step docs/effects.md shows, compiled.
func notifyShipped(provider sms.Provider, shipped phases.Value[order], sent phases.Value[sms.Message]) phases.Step {
	return phases.Call("customer_notified", func(ctx context.Context, run *phases.Run) error {
		order, err := shipped.Get(run)
		if err != nil {
			return err
		}
		// README begin
		msg, err := sms.Send(ctx, run, provider, sms.Params{
			To: order.Phone, Text: "Your order has shipped", Reference: run.Reference(),
		}, nil)
		// README end
		if err != nil {
			return err
		}
		return sent.Set(run, *msg)
	})
}

var _ = notifyShipped

// TestReadmeShowsTheCallStep keeps the SMS call step of docs/effects.md compiled: its Go block must be
// notifyShipped's lines between the markers, two tabs of indent removed.
func TestReadmeShowsTheCallStep(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(src), "// README begin\n")
	require.True(t, ok)
	region, _, ok := strings.Cut(after, "\t\t// README end\n")
	require.True(t, ok)
	var want strings.Builder
	for _, line := range strings.SplitAfter(region, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t\t"))
	}

	readme, err := os.ReadFile("../../docs/effects.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(readme), "<!-- compiled from gateway/sms/readme_test.go -->\n```go\n")
	require.True(t, ok, "the SMS call step of docs/effects.md is marked")
	block, _, ok = strings.Cut(block, "```\n")
	require.True(t, ok)
	require.Equal(t, want.String(), block, "the SMS call step of docs/effects.md must be readme_test.go's (edit it, then copy it)")
}
