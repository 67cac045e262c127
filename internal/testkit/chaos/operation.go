package chaos

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// Point names inside a wrapped operation, for Points.Crash, Block and Fail.

// BeforeStep is reached when step of operation op starts: for an atomic phase inside its
// transaction before its body, for a call before it is made. Crashing here is dying right after
// the previous phase committed.
func BeforeStep(op, step string) string { return op + "/" + step + "/before" }

// AfterStep is reached when step's body returned without error: for an atomic phase its writes
// are done but neither they nor the key's recovery point are committed yet; for a call the
// outside world has acted and the engine has not recorded it.
func AfterStep(op, step string) string { return op + "/" + step + "/after" }

// BeforeCompensation is reached when the undo of step starts, inside its transaction.
func BeforeCompensation(op, step string) string { return op + "/" + step + "/compensate/before" }

// AfterCompensation is reached when the undo of step returned without error, before it commits.
func AfterCompensation(op, step string) string { return op + "/" + step + "/compensate/after" }

// WrapOperation returns a copy of op whose steps and compensations hit points (see BeforeStep,
// AfterStep, BeforeCompensation, AfterCompensation). Behaviour is unchanged while nothing is
// armed. An error a point returns is returned by the step as its own.
func WrapOperation(op *phases.Operation, points *Points) *phases.Operation {
	out := *op
	out.Steps = make([]phases.Step, len(op.Steps))
	for i, step := range op.Steps {
		s := runstate.Step(step)
		var w runstate.Step
		if fn := s.Atomic(); fn != nil {
			w = runstate.NewAtomic(s.Name(), wrapAtomic(points, BeforeStep(op.Name, s.Name()), AfterStep(op.Name, s.Name()), fn))
		} else {
			w = runstate.NewCall(s.Name(), wrapCall(points, BeforeStep(op.Name, s.Name()), AfterStep(op.Name, s.Name()), s.Call()))
		}
		w = w.WithReference(s.Reference()).WithAliases(s.Aliases()...)
		if undo := s.Compensation(); undo != nil {
			w = w.WithCompensation(wrapAtomic(points, BeforeCompensation(op.Name, s.Name()), AfterCompensation(op.Name, s.Name()), undo))
		}
		out.Steps[i] = phases.Step(w)
	}
	return &out
}

// WrapOperations wraps each of ops (see WrapOperation).
func WrapOperations(ops []*phases.Operation, points *Points) []*phases.Operation {
	out := make([]*phases.Operation, len(ops))
	for i, op := range ops {
		out[i] = WrapOperation(op, points)
	}
	return out
}

func wrapAtomic(points *Points, before, after string, fn runstate.AtomicFunc) runstate.AtomicFunc {
	return func(ctx context.Context, tx pgx.Tx, st *runstate.State) error {
		if err := points.hit(ctx, before, tx.Conn()); err != nil {
			return err
		}
		if err := fn(ctx, tx, st); err != nil {
			return err
		}
		return points.hit(ctx, after, tx.Conn())
	}
}

func wrapCall(points *Points, before, after string, fn runstate.CallFunc) runstate.CallFunc {
	return func(ctx context.Context, st *runstate.State) error {
		if err := points.Hit(ctx, before); err != nil {
			return err
		}
		if err := fn(ctx, st); err != nil {
			return err
		}
		return points.Hit(ctx, after)
	}
}
