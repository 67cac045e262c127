// Package runstate holds the state of one execution of an operation. It is shared by phases
// (which exposes it to operation code as phases.Run) and saga (which drives and persists it);
// users cannot import it, so only the methods below are theirs.
package runstate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Run is what every step of an operation sees: the request that claimed the key, the values
// earlier steps saved, and the response once a step decides it.
type Run struct {
	tenant, actor, key string
	operation          string
	method, path       string
	body               []byte
	resumed            bool
	attempt            int
	createdAt          time.Time

	state    map[string]json.RawMessage
	response *Response
}

// Response is what an operation answers; the engine stores it and replays its bytes.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
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
	State              map[string]json.RawMessage
}

// New starts a run. Only engines call it.
func New(p Params) *Run {
	state := p.State
	if state == nil {
		state = map[string]json.RawMessage{}
	}
	return &Run{
		tenant: p.Tenant, actor: p.Actor, key: p.Key, operation: p.Operation,
		method: p.Method, path: p.Path, body: p.Body, resumed: p.Resumed, attempt: p.Attempt,
		createdAt: p.CreatedAt, state: state,
	}
}

// Tenant is the tenant that owns the key (from authentication, never from the body).
func (r *Run) Tenant() string { return r.tenant }

// Actor is the actor within the tenant that sent the key.
func (r *Run) Actor() string { return r.actor }

// Key is the client's idempotency key.
func (r *Run) Key() string { return r.key }

// Operation is the name of the operation being run.
func (r *Run) Operation() string { return r.operation }

// Method is the HTTP method of the request that claimed the key.
func (r *Run) Method() string { return r.method }

// Path is the request path that claimed the key (path parameters can be read from it).
func (r *Run) Path() string { return r.path }

// Body is the raw JSON body of the request that claimed the key, exactly as it arrived.
func (r *Run) Body() []byte { return r.body }

// Decode unmarshals the request body into v.
func (r *Run) Decode(v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("error decoding request body: %w", err)
	}
	return nil
}

// Resumed is true when this execution continues an earlier one (a retry after a crash, the
// worker, an operator): an external call after the recovery point may already have reached the
// outside world, so it must be resolved (same downstream key, or inquiry) rather than repeated
// blindly.
func (r *Run) Resumed() bool { return r.resumed }

// Attempt counts executions of this key, starting at 1.
func (r *Run) Attempt() int { return r.attempt }

// CreatedAt is when the key was first claimed (zero until the first phase commits).
func (r *Run) CreatedAt() time.Time { return r.createdAt }

// Get loads the value a step saved under name into v. It reports false when nothing was saved.
func (r *Run) Get(name string, v any) (bool, error) {
	raw, ok := r.state[name]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("error decoding saved value %q: %w", name, err)
	}
	return true, nil
}

// Set saves v under name for the steps after this one. Values are persisted with the next
// atomic phase's commit: a value set by an external call that is followed by a crash before that
// commit is lost, and the call is resolved again on resume.
func (r *Run) Set(name string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding value %q: %w", name, err)
	}
	r.state[name] = raw
	return nil
}

// Respond sets the operation's response: v is encoded as JSON once, and those bytes are what the
// client receives now and on every replay. The phase that calls it is the last one to run; its
// writes commit together with the stored response.
func (r *Run) Respond(status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding response: %w", err)
	}
	r.response = &Response{
		Status: status,
		Header: http.Header{"Content-Type": []string{"application/json"}},
		Body:   body,
	}
	return nil
}

// RespondRaw is Respond for a body that is already encoded, with its content type.
func (r *Run) RespondRaw(status int, contentType string, body []byte) {
	r.response = &Response{Status: status, Header: http.Header{"Content-Type": []string{contentType}}, Body: body}
}

// Engine-side accessors. Users cannot reach these: the package is internal.

// ResponseOf is the response a step set, or nil.
func ResponseOf(r *Run) *Response { return r.response }

// ClearResponse drops a response set by a phase whose transaction did not commit.
func ClearResponse(r *Run) { r.response = nil }

// StateOf is the saved values, for persisting.
func StateOf(r *Run) map[string]json.RawMessage { return r.state }

// SetState replaces the saved values (after a rollback, with the last committed ones).
func SetState(r *Run, state map[string]json.RawMessage) { r.state = state }

// MarkResumed records that later steps may follow an earlier attempt's calls.
func MarkResumed(r *Run) { r.resumed = true }

// SetCreatedAt records when the key was claimed.
func SetCreatedAt(r *Run, t time.Time) { r.createdAt = t }
