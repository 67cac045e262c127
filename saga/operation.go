package saga

import (
	"slices"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// What the engine asks of an operation's declaration, beyond its fields.

// isOperation reports whether name is op's name or one of its aliases.
func isOperation(op *phases.Operation, name string) bool {
	return op.Name == name || slices.Contains(op.Aliases, name)
}

// singleTransaction reports whether op is one atomic phase: then the claim, the effect and the
// stored response commit in one transaction.
func singleTransaction(op *phases.Operation) bool {
	return len(op.Steps) == 1 && runstate.Step(op.Steps[0]).Atomic() != nil
}

// stepIndex returns the index of op's step named name (or aliased so), or -1.
func stepIndex(op *phases.Operation, name string) int {
	return slices.IndexFunc(op.Steps, func(s phases.Step) bool { return runstate.Step(s).Is(name) })
}
