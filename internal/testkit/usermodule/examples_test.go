package usermodule

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pendingExamples are Example files that still need a package of the library's internals;
// each is listed with the reason, and the test fails once it no longer does, so the list only
// shrinks.
var pendingExamples = map[string]string{
	"worker/example_test.go": "opens its database with internal/testkit/dbtest, not sagatest.OpenDB",
}

// exampleFile is one file of Examples and the package it belongs to.
type exampleFile struct {
	path     string // relative to the library's root, slash-separated
	internal bool   // it imports one of the library's internal packages
}

// Every Example of the library compiles in a user's module: each file of Examples, alone, in a
// module outside the repository that requires the library through a replace directive. A
// user copies an Example whole; one that needs an unexported helper of its package's tests,
// or an internal package, would not build for them.
func TestExamplesCompileInAUsersModule(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(libraryRoot)
	require.NoError(t, err)
	files := exampleFiles(t, root)
	require.NotEmpty(t, files, "the walk finds the library's Examples")

	user := newUserModule(t, root)

	copied := 0
	for _, f := range files {
		if reason, pending := pendingExamples[f.path]; pending {
			require.True(t, f.internal, "%s builds without internal packages now: remove it from pendingExamples (%s)", f.path, reason)
			continue
		}
		require.False(t, f.internal, "%s imports an internal package of the library, which a user's module cannot", f.path)
		copyAsPackage(t, filepath.Join(root, filepath.FromSlash(f.path)), filepath.Join(user, packageDir(f.path)))
		copied++
	}
	for path := range pendingExamples {
		require.True(t, containsPath(files, path), "pendingExamples names %s, which holds no Examples", path)
	}

	out, err := goIn(user, "build", "./...")
	require.NoError(t, err, "the Examples do not build in a user's module:\n%s", out)
	t.Logf("%d files of Examples build in a user's module", copied)
}

// exampleFiles are the library's test files that declare an Example, outside the modules
// nested in it (each has its own go.mod). Examples live in files of their own, named
// example*_test.go, so that one file is all a user needs.
func exampleFiles(t *testing.T, root string) []exampleFile {
	t.Helper()
	var out []exampleFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
				fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !declaresExample(f) {
			return nil
		}
		require.True(t, strings.HasPrefix(d.Name(), "example"),
			"%s declares an Example among other tests: move its Examples into an example_test.go of their own", rel)
		ef := exampleFile{path: rel}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p == "github.com/pgsaga/pgsaga/internal" || strings.HasPrefix(p, "github.com/pgsaga/pgsaga/internal/") {
				ef.internal = true
			}
		}
		out = append(out, ef)
		return nil
	})
	require.NoError(t, err)
	return out
}

func declaresExample(f *ast.File) bool {
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
			return true
		}
	}
	return false
}

// copyAsPackage copies a file of Examples into dir as an ordinary file of a package of its own,
// so that go build compiles it.
func copyAsPackage(t *testing.T, src, dir string) {
	t.Helper()
	fset := token.NewFileSet()
	text, err := os.ReadFile(src)
	require.NoError(t, err)
	f, err := parser.ParseFile(fset, src, text, parser.PackageClauseOnly)
	require.NoError(t, err)
	start, end := fset.Position(f.Name.Pos()).Offset, fset.Position(f.Name.End()).Offset
	renamed := string(text[:start]) + "examples" + string(text[end:])
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "examples.go"), []byte(renamed), 0o644))
}

// packageDir is the user's package for the Examples file at path: one per file.
func packageDir(path string) string {
	return strings.NewReplacer("/", "_", ".", "_").Replace(strings.TrimSuffix(path, ".go"))
}

func containsPath(files []exampleFile, path string) bool {
	for _, f := range files {
		if f.path == path {
			return true
		}
	}
	return false
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
