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

// The library's budget: the most exported names its packages may have together. It only goes
// down.
const libraryBudget = 297

// The test kits' budget: today's count, so that they do not grow unnoticed.
const testKitBudget = 86

// libraryPackages are the packages an application imports to run: the root module's packages
// outside internal/ and examples/, the engine and the effects it ships.
var libraryPackages = []string{
	"client",
	"gateway",
	"gateway/sms",
	"gateway/webhook",
	"migrations",
	"phases",
	"reconcile",
	"saga",
	"saga/sagaprom",
	"worker",
}

// testKitPackages are what users import in their tests only: the test kits (gatewaytest,
// sagatest) and the simulated providers behind them and the demo (gateway/sim,
// gateway/effectsim, gateway/sms/smssim, gateway/webhook/webhooksim). They are counted apart,
// under a budget of their own: a test kit's reach is its job, and its names are not what an
// application runs on. The modules beside the library (cmd, gateway/stripe,
// examples/offline-client, bench, soak) are programs or one adapter, not counted.
var testKitPackages = []string{
	"gateway/effectsim",
	"gateway/gatewaytest",
	"gateway/sim",
	"gateway/sms/smssim",
	"gateway/webhook/webhooksim",
	"saga/sagatest",
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
	for _, p := range append(libraryPackages, testKitPackages...) {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = "../../.."
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
// exported type its exported methods, including the methods of an interface. Each method is
// counted once, where it is declared: an alias counts its methods only when the type it names is
// declared outside the counted packages (in internal/, say), where nothing else counts them.
func exportedNames(pkg *types.Package, counted map[string]bool) []string {
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
		if tn.IsAlias() && counted[declaredIn(tn.Type())] {
			continue
		}
		for _, m := range methods(tn.Type()) {
			names = append(names, name+"."+m)
		}
	}
	return names
}

// declaredIn is the import path of the package that declares t, or "" for a type without a name.
func declaredIn(t types.Type) string {
	if named, ok := types.Unalias(t).(*types.Named); ok && named.Obj().Pkg() != nil {
		return named.Obj().Pkg().Path()
	}
	return ""
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

// importer returns a types importer that reads the compiler's export data of the library
// packages and their dependencies.
func newImporter(t *testing.T) types.Importer {
	files := exportData(t)
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
}

// count prints the exported names of pkgs, per package, and returns how many there are.
func count(t *testing.T, imp types.Importer, what string, pkgs []string) int {
	counted := map[string]bool{}
	for _, p := range append(libraryPackages, testKitPackages...) {
		counted[modulePath+"/"+p] = true
	}
	total := 0
	var report strings.Builder
	for _, p := range pkgs {
		pkg, err := imp.Import(modulePath + "/" + p)
		require.NoError(t, err, "importing %s", p)
		names := exportedNames(pkg, counted)
		total += len(names)
		fmt.Fprintf(&report, "%s (%d):\n", p, len(names))
		for _, n := range names {
			fmt.Fprintf(&report, "    %s\n", n)
		}
	}
	t.Logf("exported names of the %s:\n%stotal: %d", what, report.String(), total)
	return total
}

// TestExportedSurface counts the exported names of the library packages and of the test kits,
// prints them per package and fails when either is above its budget.
func TestExportedSurface(t *testing.T) {
	imp := newImporter(t)
	library := count(t, imp, "library packages", libraryPackages)
	t.Logf("library: %d names, budget %d", library, libraryBudget)
	kits := count(t, imp, "test kits", testKitPackages)
	require.LessOrEqual(t, library, libraryBudget, "the library packages export more names than their budget")
	require.LessOrEqual(t, kits, testKitBudget, "the test kits export more names than their budget")
}
