package phases

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

// Run is the state of one execution of an operation, given to every step.
type Run = runstate.Run

// AtomicFunc is the body of an atomic phase: its writes go through tx and commit together with
// the key's recovery point.
type AtomicFunc func(ctx context.Context, tx pgx.Tx, run *Run) error

// CallFunc is an external call. It runs outside any transaction, under a deadline shorter than
// the key's lease.
type CallFunc func(ctx context.Context, run *Run) error

// Step is one element of an operation: an atomic phase or an external call.
type Step struct {
	name       string
	atomic     AtomicFunc
	call       CallFunc
	compensate AtomicFunc
}

// Atomic declares an atomic phase. Its name is the recovery point reached when it commits.
func Atomic(name string, fn AtomicFunc) Step { return Step{name: name, atomic: fn} }

// Call declares an external call between two atomic phases.
func Call(name string, fn CallFunc) Step { return Step{name: name, call: fn} }

// WithCompensation returns the phase with an undo that runs, in its own transaction, when a
// later step fails permanently or rejects. Only atomic phases can be compensated.
func (s Step) WithCompensation(fn AtomicFunc) Step {
	s.compensate = fn
	return s
}

// Name is the step's name (for an atomic phase, its recovery point).
func (s Step) Name() string { return s.name }

// IsAtomic reports whether the step is an atomic phase.
func (s Step) IsAtomic() bool { return s.atomic != nil }

// AtomicFunc returns the phase body, or nil for an external call.
func (s Step) AtomicFunc() AtomicFunc { return s.atomic }

// CallFunc returns the call body, or nil for an atomic phase.
func (s Step) CallFunc() CallFunc { return s.call }

// Compensation returns the phase's undo, or nil.
func (s Step) Compensation() AtomicFunc { return s.compensate }

// Operation is a named, ordered list of steps.
type Operation struct {
	// Name identifies the operation in stored keys, metrics and the CLI. Required.
	Name string
	// Steps run in order. At least one; the last one to run must call Run.Respond.
	Steps []Step
	// Validate checks a request body before anything is written. Its error is answered as a
	// 400 invalid_request with the error's text as the message; nothing is stored. Optional.
	Validate func(body []byte) error
	// Retention is how long a completed key is kept for replay. Defaults to the client's
	// retention (24h).
	Retention time.Duration
	// MaxAttempts is how many executions a key gets before it is parked as failed. Defaults to
	// the client's MaxAttempts.
	MaxAttempts int
	// WaitInFlight is how long a duplicate of a request still in flight waits for it to finish
	// (woken by LISTEN/NOTIFY, never past the lease) and answers with its stored response,
	// instead of answering 409 at once. Each waiting duplicate holds a database connection.
	// Defaults to 0: answer 409 request_in_progress at once.
	WaitInFlight time.Duration
}

// Reserved recovery points.
const (
	// RecoveryPointStarted is a key's recovery point before any phase committed.
	RecoveryPointStarted = "started"
	// RecoveryPointFinished is a completed key's recovery point.
	RecoveryPointFinished = "finished"
	// recoveryPointCompensatePrefix marks a key whose compensations are under way.
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
	for i, s := range o.Steps {
		switch {
		case s.name == "":
			return fmt.Errorf("phases: operation %q: step %d has no name", o.Name, i)
		case s.atomic == nil && s.call == nil:
			return fmt.Errorf("phases: operation %q: step %q has no function", o.Name, s.name)
		case s.name == RecoveryPointStarted || s.name == RecoveryPointFinished || len(s.name) > 200:
			return fmt.Errorf("phases: operation %q: step name %q is reserved or too long", o.Name, s.name)
		case seen[s.name]:
			return fmt.Errorf("phases: operation %q: step name %q is used twice", o.Name, s.name)
		}
		seen[s.name] = true
	}
	if o.Retention < 0 || o.MaxAttempts < 0 || o.WaitInFlight < 0 {
		return fmt.Errorf("phases: operation %q: Retention, MaxAttempts and WaitInFlight must not be negative", o.Name)
	}
	return nil
}

// SingleTransaction reports whether the operation is one atomic phase: then the claim, the
// effect and the stored response commit in one transaction.
func (o *Operation) SingleTransaction() bool {
	return len(o.Steps) == 1 && o.Steps[0].atomic != nil
}
