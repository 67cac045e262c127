package runstate

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
)

// AtomicFunc, CallFunc and ReferenceFunc are a step's functions over the run's state; package
// phases wraps the user's functions (over *phases.Run) into them.
type (
	AtomicFunc    func(ctx context.Context, tx pgx.Tx, s *State) error
	CallFunc      func(ctx context.Context, s *State) error
	ReferenceFunc func(s *State) (string, error)
)

// Step is one step of an operation. phases.Step is a defined type over it, so that users see
// phases' methods only; the engine converts back to read the functions.
type Step struct {
	name       string
	aliases    []string
	atomic     AtomicFunc
	call       CallFunc
	reference  ReferenceFunc
	compensate AtomicFunc
}

// NewAtomic declares an atomic phase.
func NewAtomic(name string, fn AtomicFunc) Step { return Step{name: name, atomic: fn} }

// NewCall declares an external call.
func NewCall(name string, fn CallFunc) Step { return Step{name: name, call: fn} }

func (s Step) Name() string             { return s.name }
func (s Step) Aliases() []string        { return s.aliases }
func (s Step) Atomic() AtomicFunc       { return s.atomic }
func (s Step) Call() CallFunc           { return s.call }
func (s Step) Reference() ReferenceFunc { return s.reference }
func (s Step) Compensation() AtomicFunc { return s.compensate }
func (s Step) Is(name string) bool      { return s.name == name || slices.Contains(s.aliases, name) }
func (s Step) WithReference(fn ReferenceFunc) Step {
	s.reference = fn
	return s
}
func (s Step) WithCompensation(fn AtomicFunc) Step {
	s.compensate = fn
	return s
}
func (s Step) WithAliases(names ...string) Step {
	s.aliases = append(slices.Clone(s.aliases), names...)
	return s
}
