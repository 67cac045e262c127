package surface

import (
	"fmt"
	"go/types"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// errorBudget is the most error identifiers the library packages may export together: one per
// meaning a caller acts on, classified by behaviour (errors.Is and errors.As, Retryable), not one
// per place that fails. It only goes down.
const errorBudget = 24

// errorIdentifiers lists the error identifiers pkg exports: every exported variable named Err…
// or of type error, and every exported type named …Error or whose pointer is an error.
func errorIdentifiers(pkg *types.Package) []string {
	errType := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	var names []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		switch obj := scope.Lookup(name).(type) {
		case *types.Var:
			if obj.Exported() && (strings.HasPrefix(name, "Err") || types.Implements(obj.Type(), errType)) {
				names = append(names, name)
			}
		case *types.TypeName:
			if !obj.Exported() {
				continue
			}
			_, isIface := obj.Type().Underlying().(*types.Interface)
			if strings.HasSuffix(name, "Error") || !isIface && types.Implements(types.NewPointer(obj.Type()), errType) {
				names = append(names, name)
			}
		}
	}
	return names
}

// TestExportedErrors counts the error identifiers of the library packages, prints them per
// package and fails when there are more than the budget.
func TestExportedErrors(t *testing.T) {
	imp := newImporter(t)
	total := 0
	var report strings.Builder
	for _, p := range libraryPackages {
		pkg, err := imp.Import(modulePath + "/" + p)
		require.NoError(t, err, "importing %s", p)
		names := errorIdentifiers(pkg)
		total += len(names)
		fmt.Fprintf(&report, "%s (%d): %s\n", p, len(names), strings.Join(names, ", "))
	}
	t.Logf("exported error identifiers of the library packages:\n%stotal: %d, budget %d", report.String(), total, errorBudget)
	require.LessOrEqual(t, total, errorBudget, "the library packages export more error identifiers than their budget")
}
