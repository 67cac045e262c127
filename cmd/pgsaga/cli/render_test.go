package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain /orders/o_1":         "plain /orders/o_1",
		"caf\u00e9 \u65e5\u672c":    "caf\u00e9 \u65e5\u672c",
		"\x1b[2J\x1b[31mred":        `\x1b[2J\x1b[31mred`,
		"a\rb\nc\td":                `a\rb\nc\td`,
		"nul\x00 del\x7f":           `nul\x00 del\x7f`,
		"c1 \u009b31m":              `c1 \u009b31m`,
		"bidi \u202egnp.exe":        `bidi \u202egnp.exe`,
		"nbsp\u00a0zwsp\u200b":      `nbsp\u00a0zwsp\u200b`,
		"bad utf8 \xff\xfe":         `bad utf8 \xff\xfe`,
		`a literal \x1b stays text`: `a literal \\x1b stays text`,
	} {
		require.Equal(t, want, visible(in), "%q", in)
	}
	require.Equal(t, "{\n\t\"a\": \"\\x1b\"\n}", visibleText("{\n\t\"a\": \"\x1b\"\n}"), "lines and tabs are kept")
}
