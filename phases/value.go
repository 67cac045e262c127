package phases

import (
	"encoding/json"
	"fmt"
)

// errNoValue is Value.Get's error when no step saved the value.
var errNoValue error = &noValueError{}

type noValueError struct{}

func (*noValueError) Error() string   { return "phases: no value saved under this name" }
func (*noValueError) Retryable() bool { return false }

// Value names a value of type T that a step saves for the steps after it:
//
//	var payment = phases.Value[Payment]("payment")
//
//	// in the first phase
//	err := payment.Set(run, p)
//	// in a later step, also after a crash and resume
//	p, err := payment.Get(run)
//
// Values are saved as JSON with the key and committed with the next atomic phase (or the
// journal write before a call): a value set by an external call whose execution then crashes
// before that commit is lost, and the call is resolved again on resume. The name is stored:
// renaming a value strands keys in flight that saved it under the old name. Names beginning
// "_pgsaga" are the engine's.
type Value[T any] string

// Get returns the value a step saved. When none did it returns a permanent error (retrying
// cannot create the value): an operation that reads a value before the step that saves it has a
// bug. Has tells whether a step saved it.
func (v Value[T]) Get(run *Run) (T, error) {
	var out T
	raw, ok := run.state().Value(string(v))
	if !ok {
		return out, fmt.Errorf("value %q: %w", string(v), errNoValue)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, Permanent(fmt.Errorf("error decoding saved value %q: %w", string(v), err))
	}
	return out, nil
}

// Has reports whether a step saved the value.
func (v Value[T]) Has(run *Run) bool {
	_, ok := run.state().Value(string(v))
	return ok
}

// Set saves x for the steps after this one.
func (v Value[T]) Set(run *Run, x T) error { return run.state().SetValue(string(v), x) }
