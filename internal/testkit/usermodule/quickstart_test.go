package usermodule

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// quickstartFiles are the files the README's quickstart shows, each as one block marked
// <!-- quickstart: NAME --> right above it.
var quickstartFiles = []string{"001_orders.up.sql", "001_orders.down.sql", "orders.go", "orders_test.go"}

// maxQuickstartLines bounds the quickstart's Go: lines that are not blank, not only a comment
// and not in an import block.
const maxQuickstartLines = 60

var quickstartBlock = regexp.MustCompile("(?s)<!-- quickstart: ([^ ]+) -->\n```[a-z]*\n(.*?)```\n")

// The README's quickstart is a service a user can copy: its files, alone in a module of a user's
// outside the repository, build, and their test passes against a throwaway PostgreSQL.
func TestReadmeQuickstartBuildsAndPasses(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(libraryRoot)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)

	files := map[string]string{}
	var names []string
	for _, m := range quickstartBlock.FindAllStringSubmatch(string(readme), -1) {
		require.NotContains(t, files, m[1], "the README shows %s twice", m[1])
		files[m[1]] = m[2]
		names = append(names, m[1])
	}
	require.Equal(t, quickstartFiles, names, "the README's quickstart shows these files, in this order")

	lines := 0
	for _, name := range names {
		if strings.HasSuffix(name, ".go") {
			lines += codeLines(files[name])
		}
	}
	require.Less(t, lines, maxQuickstartLines, "the quickstart's Go has grown past its budget")
	t.Logf("the quickstart's Go: %d lines of code", lines)

	user := newUserModule(t, root)
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(user, name), []byte(text), 0o644))
	}
	out, err := goIn(user, "vet", "./...")
	require.NoError(t, err, "the quickstart does not vet in a user's module:\n%s", out)
	out, err = goIn(user, "test", "-count=1", "./...")
	require.NoError(t, err, "the quickstart's test fails in a user's module:\n%s", out)
}

// codeLines counts src's lines that are not blank, not only a comment and not in an import block.
func codeLines(src string) int {
	n, inImports := 0, false
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "import (":
			inImports = true
		case inImports:
			inImports = line != ")"
		case line == "", strings.HasPrefix(line, "//"), strings.HasPrefix(line, "import "):
		default:
			n++
		}
	}
	return n
}
