// Package model holds the protocol's spin model (pgsaga.pml, checked by check.sh); this test
// keeps its README's mapping from the model's steps to the code true.
package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The mapping table names the code that implements each step: files (under saga/ unless they
// give a directory), Go declarations in backticks (`name`, `(*T).m`, `T.field`, `pkg.Name`),
// and the schema's names (`pgsaga_key_expired`). Each must exist on the branch the test runs
// on: a rename that forgets the page fails here.
func TestTheMappingNamesCodeThatExists(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	rows := mappingRows(t, string(readme))
	require.NotEmpty(t, rows)

	decls, files := declarations(t, root)
	schema := schemaText(t, root)
	var missing []string
	for _, row := range rows {
		for _, file := range fileRef.FindAllString(row, -1) {
			path := file
			if !strings.Contains(file, "/") {
				path = "saga/" + file
			}
			if _, err := os.Stat(filepath.Join(root, path)); err != nil {
				missing = append(missing, "file "+path)
			}
		}
		for _, m := range backticked.FindAllStringSubmatch(row, -1) {
			if name := m[1]; !exists(name, decls, schema) {
				missing = append(missing, "`"+name+"`")
			}
		}
		// A name followed by its file is declared in that file.
		for _, m := range namedInFile.FindAllStringSubmatch(row, -1) {
			key, file := declKey(callArgs.ReplaceAllString(m[1], "")), m[2]
			if !strings.Contains(file, "/") {
				file = "saga/" + file
			}
			if key != "" && decls[key] && !files[key][file] {
				missing = append(missing, "`"+m[1]+"` in "+file)
			}
		}
	}
	require.Empty(t, missing, "the mapping in saga/model/README.md names what the code does not have")
}

var (
	fileRef    = regexp.MustCompile(`[\w./-]*\w\.(?:go|sql)\b`)
	backticked = regexp.MustCompile("`([^`]+)`")
	methodRef  = regexp.MustCompile(`^(?:\w+\.)?\(\*?(\w+)\)\.(\w+)$`)
	dottedRef  = regexp.MustCompile(`^(\w+)\.(\w+)$`)
	identRef   = regexp.MustCompile(`^[A-Za-z_]\w*$`)
	schemaRef  = regexp.MustCompile(`^pgsaga_\w+$`)
	// namedInFile is "`name` (file.go"; callArgs, a call's arguments after a method's name:
	// `(*execution).park(ParkedAttemptsExhausted)`.
	namedInFile = regexp.MustCompile("`([^`]+)` \\(([\\w./-]+\\.go)")
	callArgs    = regexp.MustCompile(`\(\w*\)$`)
)

// declKey is the key declarations records a method or a top-level name under ("" for anything
// else): `(*T).m` and `pkg.(*T).m` are "T.m", `name` is "name".
func declKey(name string) string {
	if m := methodRef.FindStringSubmatch(name); m != nil {
		return m[1] + "." + m[2]
	}
	if identRef.MatchString(name) && looksLikeGo(name) {
		return name
	}
	return ""
}

// mappingRows are the rows of the table under "The protocol, step by step", each row's last
// column (the code's).
func mappingRows(t *testing.T, readme string) []string {
	start := strings.Index(readme, "## The protocol, step by step")
	require.GreaterOrEqual(t, start, 0)
	section := readme[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	var rows []string
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| protocol step") {
			continue
		}
		cols := strings.Split(strings.Trim(line, "| "), " | ")
		rows = append(rows, cols[len(cols)-1])
	}
	return rows
}

// exists reports whether a backticked name is code or schema that exists; anything else (a
// statement's text, a header, a value) is not a name the test can check and passes.
func exists(name string, decls map[string]bool, schema string) bool {
	switch {
	case methodRef.MatchString(name):
		m := methodRef.FindStringSubmatch(name)
		return decls[m[1]+"."+m[2]]
	case schemaRef.MatchString(name):
		return strings.Contains(schema, name)
	case dottedRef.MatchString(name):
		// A type's field or method (T.f, or a variable's: e.journaled), or a package's name.
		m := dottedRef.FindStringSubmatch(name)
		return decls[m[1]+"."+m[2]] || decls["."+m[2]] || decls[m[2]]
	case identRef.MatchString(name) && looksLikeGo(name):
		return decls[name] || decls["."+name] // a top-level name, or a method or field
	}
	return true
}

// looksLikeGo tells a Go identifier (mixed case: claimStartedSQL, ErrLeaseLost) from a word of
// prose or SQL in backticks (started, finished).
func looksLikeGo(name string) bool {
	return strings.ToLower(name) != name && strings.ToUpper(name) != name
}

// declarations are the repository's Go declarations: every top-level name outside tests (and
// the tests' Test functions), "Type.name" for methods and struct fields, and ".name" for a
// method or field of any type.
func declarations(t *testing.T, root string) (decls map[string]bool, files map[string]map[string]bool) {
	decls, files = map[string]bool{}, map[string]map[string]bool{}
	declare := func(name, path string) {
		decls[name] = true
		rel, err := filepath.Rel(root, path)
		require.NoError(t, err)
		if files[name] == nil {
			files[name] = map[string]bool{}
		}
		files[name][filepath.ToSlash(rel)] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
					decls[fn.Name.Name] = true
				}
			}
			return nil
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					declare(receiverType(d.Recv.List[0].Type)+"."+d.Name.Name, path)
					declare("."+d.Name.Name, path)
				} else {
					declare(d.Name.Name, path)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						declare(s.Name.Name, path)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									decls[s.Name.Name+"."+n.Name] = true
									decls["."+n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declare(n.Name, path)
						}
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return decls, files
}

func receiverType(e ast.Expr) string {
	switch r := e.(type) {
	case *ast.StarExpr:
		return receiverType(r.X)
	case *ast.IndexExpr:
		return receiverType(r.X)
	case *ast.IndexListExpr:
		return receiverType(r.X)
	case *ast.Ident:
		return r.Name
	}
	return ""
}

// schemaText is every migration's SQL and every Go file's text (statements live in both).
func schemaText(t *testing.T, root string) string {
	var b strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".sql") || strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go")) {
			text, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.Write(text)
		}
		return nil
	})
	require.NoError(t, err)
	return b.String()
}
