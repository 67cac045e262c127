package main_test

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The servers register their routes on net/http's ServeMux, which cannot list them; this test
// reads them from the source instead. Every string literal of a handler package that is a
// ServeMux pattern with a method ("GET /keys/{tenant}") is a route, wherever it stands (a
// Handle call or a table of routes); every Handle or HandleFunc call whose pattern is anything
// else (computed, or without a method) must be one of routeAllowances, which says what it is.
// A route added without its operation in the document, or an operation whose route is gone,
// fails the test.

// routePackages are the packages that mount routes, by directory from this one, and the
// document their routes belong to ("" : none may have routes).
var routePackages = map[string]string{
	"../../examples/payments": "payments",
	"cli":                     "ops", // serve's and the worker's /metrics and /healthz
	"../internal/console":     "console",
	"../../gateway/sim":       "gateway-sim",
	".":                       "",
}

// routeAllowance is a registration whose pattern is not a method pattern literal.
type routeAllowance struct {
	// operation is the documented operation it serves ("GET /river/"), or "" for none.
	operation string
	why       string
}

// routeAllowances are keyed by "directory/file.go: pattern expression".
var routeAllowances = map[string]routeAllowance{
	`../../examples/payments/service.go: pattern`:     {why: "the idempotent POST routes, each a literal of the table above it"},
	`../internal/console/console.go: riverPrefix+"/"`: {operation: "GET /river/", why: "riverui and its API, one subtree"},
	`../internal/console/console.go: riverPrefix`:     {why: "a redirect to /river/"},
	`../internal/console/console.go: "/"`:             {why: "the authenticated routes, then the 404 not_found of every other path"},
	`cli/requestid.go: ctx`:                           {why: "a log handler's Handle (slog.Handler), not a route"},
}

// methodPattern is a ServeMux pattern with a method and no host.
var methodPattern = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/\S*)$`)

func TestAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	mounted := map[string][]string{} // document → its routes, as "METHOD /openapi/{path}"
	used := map[string]bool{}
	for dir, doc := range routePackages {
		pkg, err := build.ImportDir(dir, 0)
		require.NoError(t, err, dir)
		for _, name := range pkg.GoFiles {
			file := filepath.ToSlash(filepath.Join(dir, name))
			patterns, others := routesIn(t, file)
			if len(patterns) > 0 {
				require.NotEmpty(t, doc, "%s mounts %v, but no document covers its package", file, patterns)
			}
			for _, p := range patterns {
				mounted[doc] = append(mounted[doc], openAPIRoute(p))
			}
			for _, expr := range others {
				key := file + ": " + expr
				a, ok := routeAllowances[key]
				require.True(t, ok, "%s registers a route whose pattern is not a literal with a method: make it one, or say what it is in routeAllowances", key)
				used[key] = true
				if a.operation != "" {
					mounted[doc] = append(mounted[doc], a.operation)
				}
			}
		}
	}
	for key := range routeAllowances {
		require.True(t, used[key], "routeAllowances has %s, which no file registers any more", key)
	}
	for _, doc := range slices.Sorted(maps.Keys(mounted)) {
		spec := loadSpec(t, doc)
		documented := slices.Sorted(maps.Keys(spec.operations()))
		routes := slices.Compact(slices.Sorted(slices.Values(mounted[doc])))
		require.Equal(t, routes, documented, "the routes the server mounts (left) and the operations of %s.yaml (right)", doc)
	}
}

// routesIn returns the method patterns file holds as string literals, and the pattern
// expressions of its Handle and HandleFunc calls that are not such literals.
func routesIn(t *testing.T, file string) (patterns, others []string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && methodPattern.MatchString(s) {
				patterns = append(patterns, s)
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") || len(n.Args) != 2 {
				return true
			}
			if lit, ok := n.Args[0].(*ast.BasicLit); ok {
				if s, err := strconv.Unquote(lit.Value); err == nil && methodPattern.MatchString(s) {
					return true
				}
			}
			others = append(others, exprString(t, fset, file, n.Args[0]))
		}
		return true
	})
	return patterns, others
}

// exprString is expr's source text, spaces normalised.
func exprString(t *testing.T, fset *token.FileSet, file string, expr ast.Expr) string {
	t.Helper()
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	text := string(src[fset.Position(expr.Pos()).Offset:fset.Position(expr.End()).Offset])
	return strings.Join(strings.Fields(text), " ")
}

// openAPIRoute is a ServeMux method pattern as the document's "METHOD /path": "/{$}" is "/",
// "{rest...}" is "{rest}", and a subtree "/static/" is "/static/{file}" (its one parameter).
func openAPIRoute(pattern string) string {
	m := methodPattern.FindStringSubmatch(pattern)
	method, path := m[1], m[2]
	switch {
	case strings.HasSuffix(path, "/{$}"):
		path = strings.TrimSuffix(path, "{$}")
	case path != "/" && strings.HasSuffix(path, "/"):
		path += "{file}"
	}
	path = regexp.MustCompile(`\{(\w+)\.\.\.\}`).ReplaceAllString(path, "{$1}")
	return method + " " + path
}
