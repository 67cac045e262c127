// Package runstate holds the state of one execution of an operation. Package phases exposes it
// to operation code as phases.Run (a defined type over State, so `go doc` shows phases' own
// methods); package saga drives and persists it. Users cannot import this package, so only
// phases' methods are theirs.
package runstate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// State is what every step of an operation sees: the request that claimed the key, the values
// earlier steps saved, the response once a step decides it, and, during an external call, what
// the call journal knows of the call's earlier attempts.
type State struct {
	tenant, actor, key string
	operation          string
	method, path       string
	body               []byte
	resumed            bool
	attempt            int
	createdAt          time.Time

	values     map[string]json.RawMessage
	pathValues map[string]string
	response   *Response
	call       *Call
}

// PathValuesName is the saved value under which the route's wildcards and their values are kept
// with the key, so that an execution without the HTTP request (the worker's) reads them too.
// Names beginning "_pgsaga" are the engine's.
const PathValuesName = "_pgsaga_path"

// Response is what an operation answers; the engine stores it and replays its bytes. Its only
// header is its content type: the engine makes the header it stores from it.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Params are the facts an engine knows when it starts or resumes an execution.
type Params struct {
	Tenant, Actor, Key string
	Operation          string
	Method, Path       string
	Body               []byte
	Resumed            bool
	Attempt            int
	CreatedAt          time.Time
	Values             map[string]json.RawMessage
	// PathValues are the route's wildcards and their values, for a new key; a resumed one has
	// them in Values (PathValuesName).
	PathValues map[string]string
}

// New starts an execution's state. Only engines (and test kits) call it.
func New(p Params) *State {
	s := &State{
		tenant: p.Tenant, actor: p.Actor, key: p.Key, operation: p.Operation,
		method: p.Method, path: p.Path, body: p.Body, resumed: p.Resumed, attempt: p.Attempt,
		createdAt: p.CreatedAt, values: maps.Clone(p.Values), pathValues: maps.Clone(p.PathValues),
	}
	if raw, ok := s.values[PathValuesName]; ok && len(s.pathValues) == 0 {
		// Written by the engine from a map of strings: it decodes, or the key's state is not
		// this engine's (then there are no path values to read).
		_ = json.Unmarshal(raw, &s.pathValues)
	}
	s.keepPathValues()
	return s
}

// keepPathValues makes the path values part of the values saved with the key.
func (s *State) keepPathValues() {
	if len(s.pathValues) == 0 {
		return
	}
	if _, ok := s.values[PathValuesName]; !ok {
		_ = s.SetValue(PathValuesName, s.pathValues) // a map of strings always encodes
	}
}

// PathValue is the value of the route's wildcard name, or "".
func (s *State) PathValue(name string) string { return s.pathValues[name] }

func (s *State) Tenant() string       { return s.tenant }
func (s *State) Actor() string        { return s.actor }
func (s *State) Key() string          { return s.key }
func (s *State) Operation() string    { return s.operation }
func (s *State) Method() string       { return s.method }
func (s *State) Path() string         { return s.path }
func (s *State) Body() []byte         { return s.body }
func (s *State) Resumed() bool        { return s.resumed }
func (s *State) Attempt() int         { return s.attempt }
func (s *State) CreatedAt() time.Time { return s.createdAt }

// Value returns the raw value saved under name.
func (s *State) Value(name string) (json.RawMessage, bool) {
	raw, ok := s.values[name]
	return raw, ok
}

// SetValue saves v, encoded as JSON, under name.
func (s *State) SetValue(name string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding value %q: %w", name, err)
	}
	if s.values == nil {
		s.values = map[string]json.RawMessage{}
	}
	s.values[name] = raw
	return nil
}

// Respond sets the response, encoding v as JSON once.
func (s *State) Respond(status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding response: %w", err)
	}
	s.RespondRaw(status, "application/json", body)
	return nil
}

// RespondRaw sets the response from encoded bytes.
func (s *State) RespondRaw(status int, contentType string, body []byte) {
	s.response = &Response{Status: status, ContentType: contentType, Body: body}
}

// Engine-side methods.

// Response is the response a step set, or nil.
func (s *State) Response() *Response { return s.response }

// Values are the saved values, for persisting (nil when there are none). The caller must not
// change them.
func (s *State) Values() map[string]json.RawMessage { return s.values }

// Reset forgets what a step that did not commit set: its values (back to committed) and its
// response.
func (s *State) Reset(committed map[string]json.RawMessage) {
	s.values = maps.Clone(committed)
	s.keepPathValues()
	s.response = nil
}

// Resume records that this execution continues an earlier one, as its attempt-th.
func (s *State) Resume(attempt int) {
	s.resumed = true
	s.attempt = attempt
}

// SetCreatedAt records when the key was claimed.
func (s *State) SetCreatedAt(t time.Time) { s.createdAt = t }

// Call is what an external call step knows of itself while it runs.
type Call struct {
	// Step is the call step's name; Reference the downstream reference it declared.
	Step, Reference string
	// Prior are the earlier attempts of this call, from the journal, oldest first, their times
	// on this process's clock.
	Prior []CallRecord
	// Declare journals the provider's in-flight window before a request is sent (see
	// phases.Run.DeclareInFlight); nil when nothing needs journaling.
	Declare func(ctx context.Context, window time.Duration) error

	recorded   bool
	outcome    string
	providerID string
}

// BeginCall enters an external call step.
func (s *State) BeginCall(c *Call) { s.call = c }

// Call is the call step under way, or nil outside one.
func (s *State) Call() *Call { return s.call }

// EndCall leaves the call step and returns what the call recorded (ok false when it did not).
func (s *State) EndCall() (outcome, providerID string, ok bool) {
	c := s.call
	s.call = nil
	if c == nil || !c.recorded {
		return "", "", false
	}
	return c.outcome, c.providerID, true
}

// DeclareInFlight journals the in-flight window of the call under way before it sends (see
// Call.Declare). Outside a call step, or with no Declare, it does nothing.
func (s *State) DeclareInFlight(ctx context.Context, window time.Duration) error {
	if s.call == nil || s.call.Declare == nil {
		return nil
	}
	return s.call.Declare(ctx, window)
}

// Record notes what the call under way came to. Outside a call step it does nothing.
func (s *State) Record(outcome, providerID string) {
	if s.call != nil {
		s.call.recorded, s.call.outcome, s.call.providerID = true, outcome, providerID
	}
}
