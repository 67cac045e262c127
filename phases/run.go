package phases

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pgsaga/pgsaga/internal/problem"
	"github.com/pgsaga/pgsaga/internal/runstate"
)

// DefaultReference is the downstream reference (the idempotency key and inquiry reference a
// provider sees) of a call step that declares none with Step.WithReference: "ref_" and 26
// characters of lowercase, unpadded RFC 4648 base32 of the first 16 bytes of the SHA-256 of
// "pgsaga call reference v1", the tenant, the actor, the idempotency key, the operation's name
// and the step's name, each preceded by its length in bytes as a uvarint
// (encoding/binary.PutUvarint). It derives from the intent, which the client sends again,
// so every execution of it — a retry, the worker, a re-execution after a failover lost the
// key's commits — sends the same reference, and two calls of one operation send two. It is 30
// characters, within every provider's limits (Stripe's idempotency keys: 255), and carries no
// client-supplied text. The derivation never changes: references are stored at providers.
//
// Renaming the operation or the step changes the references of keys that have not journaled
// the call yet; keys that have keep the journaled one.
func DefaultReference(tenant, actor, key, operation, step string) string {
	return runstate.DefaultReference(tenant, actor, key, operation, step)
}

// IntentID is the identifier Run.IntentID gives in a run of the intent (tenant, actor, key),
// for tests and tools that find a row from the key's scope and key:
//
//	id := phases.IntentID("tenant-1", "alice", "4f1c2a9e-key", "pay")
//	// the payment that the intent's run created as run.IntentID("pay")
//
// It is prefix, "_", and 26 characters of lowercase, unpadded RFC 4648 base32 of the first 16
// bytes of the SHA-256 of "pgsaga intent id v1", the tenant, the actor, the key and prefix, each
// preceded by its length in bytes as a uvarint (encoding/binary.PutUvarint). Two prefixes give
// two unrelated ids; the operation's name is not part of it. 128 bits make a collision between
// any two of 2^40 intents a chance below 1 in 10^14. The prefix is used as given: keep it short
// and URL-safe. The derivation never changes: ids are stored.
func IntentID(tenant, actor, key, prefix string) string {
	return runstate.IntentID(tenant, actor, key, prefix)
}

// Run is one execution of an operation, given to every step: the request that claimed the key,
// the values earlier steps saved (see Value), the response once a step decides it and, during an
// external call, what the call journal knows of the call's earlier attempts.
//
// A Run belongs to one execution and one goroutine at a time. The engine creates it; a test may
// create one with sagatest.
type Run runstate.State

func (r *Run) state() *runstate.State { return (*runstate.State)(r) }

// Tenant is the tenant that owns the key (from authentication, never from the body).
func (r *Run) Tenant() string { return r.state().Tenant() }

// Actor is the actor within the tenant that sent the key.
func (r *Run) Actor() string { return r.state().Actor() }

// Key is the client's idempotency key.
func (r *Run) Key() string { return r.state().Key() }

// Operation is the name of the operation being run.
func (r *Run) Operation() string { return r.state().Operation() }

// Method is the HTTP method of the request that claimed the key.
func (r *Run) Method() string { return r.state().Method() }

// Path is the request path that claimed the key (PathValue reads its parameters).
func (r *Run) Path() string { return r.state().Path() }

// PathValue is the value of the wildcard name in the pattern of the route that served the
// request (Go's http.ServeMux: "{id}" in "POST /orders/{id}/ship"), as http.Request.PathValue
// gives it, or "" when the route has no such wildcard or the handler was mounted without a
// pattern. The values are kept with the key, so every execution reads the same ones: a retry,
// the worker's resume (which has no HTTP request), an operator's. A request run without HTTP
// gives them in saga.Request.PathValues.
func (r *Run) PathValue(name string) string { return r.state().PathValue(name) }

// Body is the raw JSON body of the request that claimed the key, exactly as it arrived.
func (r *Run) Body() []byte { return r.state().Body() }

// Decode unmarshals the request body into v.
func (r *Run) Decode(v any) error {
	if err := json.Unmarshal(r.Body(), v); err != nil {
		return fmt.Errorf("error decoding request body: %w", err)
	}
	return nil
}

// Resumed is true when this execution continues an earlier one (a retry after a crash, the
// worker, an operator). Calls need not look at it: the engine tells a call what its earlier
// attempts did (PriorCalls), which is what deciding to inquire needs.
func (r *Run) Resumed() bool { return r.state().Resumed() }

// Attempt counts executions of this key, starting at 1.
func (r *Run) Attempt() int { return r.state().Attempt() }

// CreatedAt is when the key was first claimed (zero until the first phase commits).
func (r *Run) CreatedAt() time.Time { return r.state().CreatedAt() }

// Respond sets the operation's response: v is encoded as JSON once, and those bytes are what the
// client receives now and on every replay. The phase that calls it is the last one to run; its
// writes commit together with the stored response.
func (r *Run) Respond(status int, v any) error { return r.state().Respond(status, v) }

// RespondRaw is Respond for a body that is already encoded, with its content type.
func (r *Run) RespondRaw(status int, contentType string, body []byte) {
	r.state().RespondRaw(status, contentType, body)
}

// RespondError ends the operation with an error answer while the phase's writes commit with
// it: status (a 4xx), the stable code and the message for people, in the problem details shape
// of every error pgsaga answers (Content-Type application/problem+json; type, title, status,
// detail, and error and message as extension members), followed by fields as extension
// members in the order of their names. Where Reject discards the phase's writes and
// compensates the phases before it, RespondError is an answer like Respond: an order held for
// review writes its status and answers 409 with the current price,
//
//	return run.RespondError(http.StatusConflict, "price_changed", "the price changed; the order is held for review",
//		map[string]any{"order_id": id, "current_price": price})
//
// and the answer is stored and replayed byte for byte. A field named like a member of the
// problem (type, title, status, detail, error, message) is left out. A status outside 4xx, an
// empty code or a field that cannot be encoded as JSON is a bug of the operation: the error is
// permanent and nothing is answered.
func (r *Run) RespondError(status int, code, message string, fields map[string]any) error {
	switch {
	case status < 400 || status > 499:
		return Permanent(fmt.Errorf("phases: RespondError answers a 4xx status, not %d", status))
	case code == "":
		return Permanent(errors.New("phases: RespondError needs an error code"))
	}
	body, err := problem.Body(status, code, message, fields)
	if err != nil {
		return Permanent(fmt.Errorf("phases: RespondError: %w", err))
	}
	r.RespondRaw(status, problem.ContentType, body)
	return nil
}

// IntentID returns the identifier IntentID (the package function) derives from this run's
// intent — its tenant, actor and idempotency key, which the client sends again on every retry —
// for a business row that one execution creates (a payment's id), such as
// "pay_rne4adu4q7uttomahtfnsihyc4".
//
// An id drawn at random in a phase is forgotten with that phase's commit: when a database
// failover loses acknowledged commits (asynchronous replication), the client's retry runs the
// operation again and draws a new id, and a downstream key derived from it is new to the
// provider, which charges again. An IntentID is the same in every execution of the intent,
// so is every key derived from it.
func (r *Run) IntentID(prefix string) string { return r.state().IntentID(prefix) }

// Reference is the downstream reference of the call step under way, as journaled before the
// call was sent: the one the step declared (Step.WithReference), or else DefaultReference's
// for this key, operation and step. Empty outside a call step.
func (r *Run) Reference() string {
	if c := r.state().Call(); c != nil {
		return c.Reference
	}
	return ""
}

// PriorCalls are the earlier attempts of the call step under way, oldest first, from the call
// journal: empty on a call's first attempt, and outside a call step. An attempt whose record
// MayHaveReached must be resolved (same downstream key, or inquiry) before the call is sent
// again; gateway.Execute does so.
func (r *Run) PriorCalls() []CallRecord {
	c := r.state().Call()
	if c == nil || len(c.Prior) == 0 {
		return nil
	}
	return slices.Clone(c.Prior)
}

// DeclareInFlight journals, before the call step under way sends a request, the provider's
// in-flight window in force (how long a request sent may take to land): the attempt's journal
// row then holds the longest window it sent under, and a later attempt waits by the larger of
// that and the window declared then before it trusts an empty inquiry, even when the provider's
// window shrank meanwhile or this process dies mid-call. It writes only when the window is
// longer than the one already journaled for the attempt (the engine journals the last window
// this client saw for the step with the attempt's row). When it returns an error the request
// must not be sent. Outside a call step it does nothing.
func (r *Run) DeclareInFlight(ctx context.Context, window time.Duration) error {
	return r.state().DeclareInFlight(ctx, window)
}

// RecordCall records what the call step under way came to, and the provider's identifier for
// it (a charge id) when known. The engine writes it to the call journal with the key's next
// write. A call step that returns without recording counts as succeeded when it returns nil
// and as unknown (it may have reached the provider) when it returns an error.
func (r *Run) RecordCall(outcome CallOutcome, providerID string) {
	r.state().Record(string(outcome), providerID)
}
