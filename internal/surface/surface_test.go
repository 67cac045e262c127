package surface

import (
	"encoding/json"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// budget is the most exported names the library packages may have together.
const budget = 300

// libraryPackages are the packages an application imports: the root module's packages outside
// internal/ and examples/. The test kits (gateway/gatewaytest, saga/sagatest) and the simulated
// providers (gateway/sim, gateway/effectsim) are counted too: users import them in their tests,
// and every name there is one more to learn. The modules beside the library (cmd, gateway/stripe,
// examples/offline-client, bench) are programs or adapters with surfaces of their own.
var libraryPackages = []string{
	"client",
	"gateway",
	"gateway/effectsim",
	"gateway/gatewaytest",
	"gateway/sim",
	"gateway/sms",
	"gateway/webhook",
	"migrations",
	"phases",
	"reconcile",
	"recovery",
	"saga",
	"saga/sagaprom",
	"saga/sagatest",
	"worker",
}

const modulePath = "github.com/pgsaga/pgsaga"

// listedPackage is what `go list -export -json` says of one package.
type listedPackage struct {
	ImportPath string
	Export     string
	Standard   bool
}

// exportData compiles the library packages and their dependencies and returns each package's
// export data file by import path, the way the compiler itself imports them.
func exportData(t *testing.T) map[string]string {
	t.Helper()
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export"}
	for _, p := range libraryPackages {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -export")
	files := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		files[p.ImportPath] = p.Export
	}
	return files
}

// exportedNames lists a package's exported names: every exported top-level name, and for each
// exported type (an alias counts as the type it names) its exported methods, including the
// methods of an interface.
func exportedNames(pkg *types.Package) []string {
	var names []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		names = append(names, name)
		tn, ok := obj.(*types.TypeName)
		if !ok {
			continue
		}
		for _, m := range methods(tn.Type()) {
			names = append(names, name+"."+m)
		}
	}
	return names
}

// methods lists the exported methods declared on a named type, or an interface's exported
// methods.
func methods(t types.Type) []string {
	var out []string
	t = types.Unalias(t)
	if iface, ok := t.Underlying().(*types.Interface); ok {
		for i := range iface.NumMethods() {
			if m := iface.Method(i); m.Exported() {
				out = append(out, m.Name())
			}
		}
		return out
	}
	named, ok := t.(*types.Named)
	if !ok {
		return nil
	}
	for i := range named.NumMethods() {
		if m := named.Method(i); m.Exported() {
			out = append(out, m.Name())
		}
	}
	sort.Strings(out)
	return out
}

// TestExportedSurface counts the library packages' exported names, prints them per package and
// fails above the budget.
func TestExportedSurface(t *testing.T) {
	files := exportData(t)
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	total := 0
	var report strings.Builder
	for _, p := range libraryPackages {
		pkg, err := imp.Import(modulePath + "/" + p)
		require.NoError(t, err, "importing %s", p)
		names := exportedNames(pkg)
		total += len(names)
		fmt.Fprintf(&report, "%s (%d):\n", p, len(names))
		for _, n := range names {
			fmt.Fprintf(&report, "    %s\n", n)
		}
	}
	t.Logf("exported names of the library packages:\n%s", report.String())
	t.Logf("total: %d (budget %d)", total, budget)
	require.LessOrEqual(t, total, budget, "the library packages export more names than the budget")
}
