package phases

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

// AtomicFunc is the body of an atomic phase: its writes go through tx and commit together with
// the key's recovery point.
type AtomicFunc func(ctx context.Context, tx pgx.Tx, run *Run) error

// CallFunc is an external call. It runs outside any transaction, under a deadline that ends
// well before the key's lease does.
type CallFunc func(ctx context.Context, run *Run) error

// ReferenceFunc derives a call's downstream reference (the key the provider sees) from the
// values saved so far. It must be a pure function of the intent: every attempt, in this process
// or after a crash, and every execution of the intent, after a failover that lost the key's
// commits too, must derive the same reference (see Step.WithReference).
type ReferenceFunc func(run *Run) (string, error)

// Step is one element of an operation: an atomic phase or an external call.
type Step runstate.Step

func (s Step) def() runstate.Step { return runstate.Step(s) }

// Atomic declares an atomic phase. Its name is the recovery point reached when it commits.
//
// The name is stored with every key that reaches it: renaming a phase strands keys in flight at
// the old name unless the old name is kept with WithAliases.
func Atomic(name string, fn AtomicFunc) Step {
	return Step(runstate.NewAtomic(name, wrapAtomic(fn)))
}

// Call declares an external call between two atomic phases. The engine journals each attempt
// (pgsaga_call_journal) in the same fenced write that renews the key's lease, before the call is
// sent, and records its outcome after: a call never runs twice at once for one key, and on resume it
// learns from Run.PriorCalls whether an earlier attempt may have reached the provider.
func Call(name string, fn CallFunc) Step {
	var call runstate.CallFunc
	if fn != nil {
		call = func(ctx context.Context, st *runstate.State) error { return fn(ctx, (*Run)(st)) }
	}
	return Step(runstate.NewCall(name, call))
}

func wrapAtomic(fn AtomicFunc) runstate.AtomicFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, tx pgx.Tx, st *runstate.State) error { return fn(ctx, tx, (*Run)(st)) }
}

// WithReference declares how the call derives its downstream reference, so that the engine can
// journal it before the call is sent (an operator looking at a call that crashed mid-flight
// sees what the provider was told). Only external calls have references. A call without one
// gets DefaultReference's, derived from the intent.
//
// Derive it from the intent: from Run.IntentID values, or the key's scope and key, never from
// an id a phase draws at random. A failover that loses acknowledged commits forgets such an id,
// the client's retry runs the operation again with a new one, and the provider sees a new key.
func (s Step) WithReference(fn ReferenceFunc) Step {
	var ref runstate.ReferenceFunc
	if fn != nil {
		ref = func(st *runstate.State) (string, error) { return fn((*Run)(st)) }
	}
	return Step(s.def().WithReference(ref))
}

// WithCompensation returns the phase with an undo that runs, in its own transaction, when a
// later step fails permanently or rejects. The undo and the record that it ran commit together,
// so it runs exactly once however many times the key is resumed. Only atomic phases can be
// compensated: Operation.Check refuses a compensation on an external call.
func (s Step) WithCompensation(fn AtomicFunc) Step {
	return Step(s.def().WithCompensation(wrapAtomic(fn)))
}

// WithAliases returns the step with former names that keys in flight may still carry as their
// recovery point (or call journal step), so a step can be renamed safely.
func (s Step) WithAliases(names ...string) Step { return Step(s.def().WithAliases(names...)) }

// Name is the step's name (for an atomic phase, its recovery point).
func (s Step) Name() string { return s.def().Name() }

// Operation is a named, ordered list of steps.
type Operation struct {
	// Name identifies the operation in stored keys, metrics and the CLI. Required. It is
	// stored with every key: renaming an operation strands its keys in flight unless the old
	// name is kept in Aliases.
	Name string
	// Aliases are former names of the operation that stored keys may still carry. Defaults to
	// none.
	Aliases []string
	// Steps run in order. At least one; the last one to run must call Run.Respond.
	Steps []Step
	// Validate checks a request body before anything is written. Its error is answered as a
	// 400 invalid_request with the error's text as the message; nothing is stored. Optional.
	Validate func(body []byte) error
	// Settle is the operator's way out for a parked key (pgsaga settle): it runs in one
	// transaction with the key's saved values and the operator's decision, must call
	// Run.Respond, and its writes commit with that response and the key's completion. An error
	// refuses the settlement and changes nothing. Defaults to nil: the operation's keys cannot
	// be settled.
	Settle SettleFunc
	// Retention is how long a completed key is kept for replay. Defaults to the client's
	// retention (24h).
	Retention time.Duration
	// MaxAttempts is how many scheduled executions a key gets before it is parked. Defaults to
	// the client's MaxAttempts.
	MaxAttempts int
	// MaxAge parks a started key older than this at its next execution. Defaults to the
	// client's MaxAge.
	MaxAge time.Duration
	// WaitInFlight is how long a duplicate of a request still in flight waits for it to finish
	// (woken by LISTEN/NOTIFY, never past the lease nor the caller's deadline) and answers with
	// its stored response, instead of answering 409 at once. A waiting duplicate holds no pooled
	// connection while it waits: the duplicates of a process share one listening connection of
	// their own, so the execution they wait for always gets its connections, whatever the size
	// of the pool. Defaults to 0: answer 409 request_in_progress at once.
	WaitInFlight time.Duration
}

// Reserved recovery points.
const (
	// RecoveryPointStarted is a key's recovery point before any phase committed.
	RecoveryPointStarted = "started"
	// RecoveryPointFinished is a completed key's recovery point.
	RecoveryPointFinished = "finished"
	// RecoveryPointCompensated is a key whose compensations all committed (it is parked, or
	// completed with a business outcome).
	RecoveryPointCompensated = "compensated"
	// RecoveryPointCompensatePrefix, followed by a phase's name, marks a key whose compensation
	// of that phase is the next to run.
	RecoveryPointCompensatePrefix = "compensate:"
)

// Check reports what is wrong with an operation's declaration, naming the field.
func (o *Operation) Check() error {
	if o.Name == "" {
		return errors.New("phases: Operation.Name is required")
	}
	if len(o.Steps) == 0 {
		return fmt.Errorf("phases: operation %q: Operation.Steps needs at least one step", o.Name)
	}
	seen := map[string]bool{}
	for i, step := range o.Steps {
		s := step.def()
		if s.Atomic() == nil && s.Call() == nil {
			return fmt.Errorf("phases: operation %q: step %d (%q) has no function", o.Name, i, s.Name())
		}
		if s.Call() != nil && s.Compensation() != nil {
			return fmt.Errorf("phases: operation %q: step %q is an external call and cannot have a compensation (compensate the atomic phase before it)", o.Name, s.Name())
		}
		if s.Atomic() != nil && s.Reference() != nil {
			return fmt.Errorf("phases: operation %q: step %q is an atomic phase and cannot have a reference", o.Name, s.Name())
		}
		for _, name := range append([]string{s.Name()}, s.Aliases()...) {
			if err := checkStepName(name); err != nil {
				return fmt.Errorf("phases: operation %q: step %d: %w", o.Name, i, err)
			}
			if seen[name] {
				return fmt.Errorf("phases: operation %q: step name %q is used twice", o.Name, name)
			}
			seen[name] = true
		}
	}
	if o.Retention < 0 || o.MaxAttempts < 0 || o.MaxAge < 0 || o.WaitInFlight < 0 {
		return fmt.Errorf("phases: operation %q: Retention, MaxAttempts, MaxAge and WaitInFlight must not be negative", o.Name)
	}
	return nil
}

func checkStepName(name string) error {
	switch {
	case name == "":
		return errors.New("a step has no name")
	case name == RecoveryPointStarted || name == RecoveryPointFinished || name == RecoveryPointCompensated ||
		strings.HasPrefix(name, RecoveryPointCompensatePrefix):
		return fmt.Errorf("step name %q is reserved", name)
	case len(name) > 200:
		return fmt.Errorf("step name %q is longer than 200 bytes", name)
	}
	return nil
}
