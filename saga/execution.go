package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/internal/problem"
	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// An execution is one run of an operation's steps by this process, for one request or one
// resume. Where it stands with its key is its stage, which only its writes move:
//
//	stageNew ──claim committed──────────────▶ stageHolding ──complete / park / release──▶ stageEnded
//	   │        (or a takeover, or its own              │
//	   │         claim found stored after its           └──lease taken over (fenced)──▶ stageEnded
//	   │         COMMIT's answer was lost)
//	   └──answered from the stored key (replay, 409, 422, parked, not due): nothing written
//
// Who runs it (its runner) decides the attempt budget and how a lost lease is answered.

// stage is where an execution stands with its key.
type stage int

const (
	// stageNew: nothing this execution wrote is stored (the key may be another's, not yet seen).
	stageNew stage = iota
	// stageHolding: the execution's claim or takeover committed: it holds the key's lease, and
	// its writes are fenced by its token.
	stageHolding
	// stageEnded: the execution made its last write (completed or parked the key, or gave its
	// lease back) or lost the lease: it writes nothing more.
	stageEnded
)

// runner is who runs an execution.
type runner int

const (
	// byClient: a request, whose caller waits for the answer (Run, a retry's takeover).
	byClient runner = iota
	// byWorker: the worker's resume of a due key; nobody waits, and a lost lease is reported
	// (ErrLeaseLost).
	byWorker
	// byOperator: an operator's resume: no attempt budget, a lost lease is reported, and the
	// resume is recorded in the key's history under the operator's name.
	byOperator
)

// execution is one run of an operation's steps by this process.
type execution struct {
	c   *Client
	op  *phases.Operation
	req *Request
	// request is the engine's copy of the caller's request (Run leaves the caller's alone), with
	// the operation it runs; req points at it. Held in the execution rather than allocated
	// apart: one allocation fewer a request.
	request Request
	hash    []byte
	// by is who runs the execution; operator names the operator of a byOperator one.
	by       runner
	operator string
	// stage is where the execution stands with its key; h is its hold once it holds it: the
	// key, the lease's fencing token and the attempt.
	stage stage
	h     holder
	// redacted is req as a claim stores it (Config.RedactRequest), made on first use.
	redacted *Request
	// st is the run's state, made when the execution first runs a step: a retry answered from
	// the stored key never needs one.
	st *runstate.State
	// spent is how much of the attempt budget the key has used, this execution included.
	spent int
	// rp is the key's recovery point as last committed; committed the saved values then.
	rp        string
	committed map[string]json.RawMessage
	// leaseEnd is when (local clock) the lease last written certainly still holds: measured
	// from when that write was sent, which is before the database wrote it.
	leaseEnd time.Time
	// done is the outcome of the call just made, written with the key's next write.
	done *callDone
	// journaled is what the last write reported of the call it journaled (the next step's).
	journaled *journaledCall
	// reached are the recovery points this execution wrote, and when (estimate.go).
	reached  [maxReached]reached
	nreached int
	// caller is the context of the request's caller (nil for a resume no caller waits for):
	// it bounds a duplicate's wait for the execution in flight (callerBound).
	caller context.Context
	// answer is the response a step decided and the key stored: the operation is done.
	answer *Response
	// head is the key as a retry sees it, once the execution read it (nil before).
	head *keyHead
	// phaseCtx bounds the execution's phases, one after the other (phasectx.go); phaseCancel
	// ends the bound of a phase whose context could be cancelled from outside.
	phaseCtx    *phaseContext
	phaseCancel context.CancelFunc
	// span is the request's span, nil when tracing is off (or for a resume, whose span is its
	// own).
	span trace.Span
}

// journaledCall is a call whose journal entry a write committed, with what it said of the call's
// earlier attempts.
type journaledCall struct {
	start   *callStart
	written *written
	at      time.Time // when the write returned
	// inRow is true when the entry is in the key row: the key's claim journaled the call.
	inRow bool
}

func (c *Client) newExecution(op *phases.Operation, req *Request, hash []byte, by runner) *execution {
	e := &execution{
		c: c, op: op, request: *req, hash: hash, by: by, rp: phases.RecoveryPointStarted, spent: 1,
		h: holder{scope: req.Scope, key: req.Key, attempt: 1},
	}
	e.request.operation = op.Name
	e.req = &e.request
	return e
}

// keyHead is where the execution reads the key into.
func (e *execution) keyHead() *keyHead {
	if e.head == nil {
		e.head = &keyHead{}
	}
	return e.head
}

// runState is the run's state, made on first use for a new key.
func (e *execution) runState() *runstate.State {
	if e.st == nil {
		e.st = runstate.New(runstate.Params{
			Tenant: e.req.Scope.Tenant, Actor: e.req.Scope.Actor, Key: e.req.Key, Operation: e.op.Name,
			Method: e.req.Method, Path: e.req.Path, Body: e.req.Body, Attempt: 1, PathValues: e.req.PathValues,
		})
	}
	return e.st
}

// leaseFrom records a lease of left (as the database measured it right after writing it) from a
// write sent at sent.
func (e *execution) leaseFrom(sent time.Time, left time.Duration) { e.leaseEnd = sent.Add(left) }

// execute runs the steps from index from on.
func (e *execution) execute(ctx context.Context, from int) (*Result, error) {
	e.runState()
	for i := from; i < len(e.op.Steps); i++ {
		step := runstate.Step(e.op.Steps[i])
		var err error
		start := time.Now()
		if step.Atomic() != nil {
			phaseCtx, span := e.tracePhase(ctx, step.Name())
			err = e.atomic(phaseCtx, i)
			endSpan(span, err)
		} else {
			err = e.call(ctx, i)
		}
		e.c.observer.Step(e.op.Name, step.Name(), time.Since(start))
		if err != nil {
			return e.fail(ctx, i, err)
		}
		if e.answer != nil {
			return &Result{Response: e.answer, Resumed: e.st.Resumed()}, nil
		}
	}
	return e.fail(ctx, len(e.op.Steps), phases.Permanent(fmt.Errorf("operation %q ran every step without a response", e.op.Name)))
}

// advance is the key's next state after phase name committed, with resp when it finished: the
// claim of a key not stored yet, else a fenced completion or advance.
func (e *execution) advance(name string, resp *Response) *keyWrite {
	w := &keyWrite{kind: writeAdvance, status: KeyStatusStarted, recoveryPoint: name, state: e.st.Values(),
		lease: e.c.cfg.Lease, done: e.done}
	if resp != nil {
		w.status, w.kind, w.recoveryPoint = KeyStatusCompleted, writeComplete, phases.RecoveryPointFinished
		w.response, w.retention, w.lease = resp, e.c.retention(e.op), 0
	}
	if e.stage == stageNew {
		e.claiming(w)
	}
	return w
}

// requestFor is the request w stores: for a claim, the request with its body as
// Config.RedactRequest makes it (once per execution), else the request as it arrived (a write
// that is not a claim stores nothing of it).
func (e *execution) requestFor(w *keyWrite) *Request {
	if w.kind != writeClaim || e.c.cfg.RedactRequest == nil {
		return e.req
	}
	if e.redacted == nil {
		r := *e.req
		if body := e.c.cfg.RedactRequest(e.op.Name, e.req.Body); body != nil {
			r.Body = body
		}
		e.redacted = &r
	}
	return e.redacted
}

// claiming makes w the claim of a new key, under the fencing token of its first lease (a key
// finished by its first phase keeps it too: it tells this execution's commit from a
// duplicate's), with the trace context of the request that claims it.
func (e *execution) claiming(w *keyWrite) {
	if !e.h.token.Valid {
		e.h.token = newToken()
	}
	w.kind, w.traceContext = writeClaim, e.claimTraceContext()
}

// wrote records that w committed: the execution holds the key (or, after a completion or a
// park, has ended), its values and recovery point are the committed ones, the call outcome it
// carried is journaled.
func (e *execution) wrote(w *keyWrite, out *written, sent time.Time) {
	if e.stage == stageNew {
		e.st.SetCreatedAt(out.createdAt)
	}
	e.stage = stageHolding
	if w.status != KeyStatusStarted {
		e.stage = stageEnded
	}
	e.committed = maps.Clone(w.state)
	e.rp = w.recoveryPoint
	e.done = nil
	e.journaled = nil
	if w.status == KeyStatusStarted && w.lease > 0 {
		e.leaseFrom(sent, out.leaseLeft)
	}
	switch w.status {
	case KeyStatusStarted:
		e.reach(w.recoveryPoint)
	case KeyStatusCompleted:
		e.learnFinish()
	}
	if w.next != nil {
		e.journaled = &journaledCall{start: w.next, written: out, at: time.Now(), inRow: w.kind == writeClaim}
	}
}

// stored turns the response a step set into the one to store and send (redacted once, so the
// first answer and every replay are the same bytes).
func (e *execution) stored() *Response {
	return e.c.storedResponse(e.op, e.st.Response())
}

func (c *Client) storedResponse(op *phases.Operation, r *runstate.Response) *Response {
	if r == nil {
		return nil
	}
	resp := &Response{Status: r.Status, Header: http.Header{"Content-Type": {r.ContentType}}, Body: r.Body}
	if c.cfg.Redact == nil && c.storesContentType {
		return resp // Content-Type is its only header, and one to store
	}
	if c.cfg.Redact != nil {
		if redacted := c.cfg.Redact(op.Name, resp); redacted != nil {
			resp = redacted
		}
	}
	kept := make(map[string][]string, len(c.cfg.StoredHeaders))
	for _, h := range c.cfg.StoredHeaders {
		if v := resp.Header.Values(h); len(v) > 0 {
			kept[h] = v
		}
	}
	resp.Header = kept
	return resp
}

// fail handles step i's error:
//   - a key found stored before the first phase's first statement, a duplicate claim or a lost
//     lease: answer from the key as it stands; a claim that met the key's tombstone: answer
//     from the tombstone;
//   - a refusal of the database that every retry would meet (refusal.go): the client's data
//     (400 invalid_request, stored like a rejection once a phase committed, nothing stored
//     before), or a clash with committed data (409 conflict, stored);
//   - a rejection (a business outcome) or a permanent failure: compensate the committed phases,
//     then store the outcome or park (permanent);
//   - an outcome nothing can resolve (a call that may have had its effect): park at once,
//     compensating nothing (outcome_unknown);
//   - anything else: transient.
func (e *execution) fail(ctx context.Context, i int, err error) (*Result, error) {
	switch {
	case errors.Is(err, errKeyStored):
		return e.decide(ctx, e.head, decideOpts{mayTakeOver: true})
	case errors.Is(err, errDuplicate):
		return e.answerExisting(ctx, true)
	case errors.Is(err, errTombstoned):
		return e.expired(ctx, e.c.cfg.DB)
	case errors.Is(err, ErrLeaseLost):
		return e.leaseLost(ctx)
	}
	if answer, stored := refusal(err); answer != nil {
		e.c.cfg.Logger.WarnContext(ctx, "request refused by the database", "operation", e.op.Name, "key", e.req.Key,
			"status", answer.status, "error", err)
		if e.stage == stageNew && !stored {
			return nil, &InvalidRequestError{Err: errors.New(answer.message)}
		}
		return e.compensate(ctx, i-1, &outcome{Response: rejectResponse(*answer)})
	}
	reject, isReject := rejected(err)
	switch {
	case isReject:
		return e.compensate(ctx, i-1, &outcome{Response: rejectResponse(reject)})
	case phases.IsOutcomeUnknown(err) && e.stage != stageNew:
		return e.park(ctx, ParkedOutcomeUnknown, err.Error())
	case !phases.IsRetryable(err):
		e.c.cfg.Logger.ErrorContext(ctx, "operation failed permanently", "operation", e.op.Name, "key", e.req.Key, "error", err)
		return e.compensate(ctx, i-1, &outcome{Error: err.Error()})
	}
	return e.transient(ctx, err)
}

// rejectResponse is the stored answer of a business rejection.
func rejectResponse(r rejection) *storedResponse {
	return &storedResponse{Status: r.status, Header: map[string][]string{"Content-Type": {problem.ContentType}},
		Body: errorBody(r.status, r.code, r.message)}
}

// transient handles a failure a retry may fix. A key this execution holds gets its lease back
// early with the next attempt scheduled in SQL (and the outcome of the call just made
// journaled), or is parked once its attempt budget is spent; a pending call spends no budget.
// Before its claim is known to have committed, the key is read back: not there, nothing was
// stored; stored by a duplicate, the request is answered as a retry; stored by this execution's
// own claim (the COMMIT's answer was lost), it is this request's answer, or its lease to give
// back.
func (e *execution) transient(ctx context.Context, err error) (*Result, error) {
	e.c.cfg.Logger.WarnContext(ctx, "transient failure", "operation", e.op.Name, "key", e.req.Key, "attempt", e.st.Attempt(), "error", err)
	if e.stage == stageNew {
		found, lookErr := readHead(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.keyHead())
		if lookErr != nil || !found {
			return nil, transient(err, 0)
		}
		// The key is stored: by a duplicate, or by this execution's claim, whose COMMIT reached
		// the database while its answer was lost. A duplicate's key answers as a retry would.
		if !e.claimedByUs(ctx) {
			return e.decide(ctx, e.head, decideOpts{})
		}
		e.stage = stageHolding
		if e.head.Status != KeyStatusStarted {
			return e.decide(ctx, e.head, decideOpts{}) // finished by this request: its answer, no replay
		}
		// Started under this execution's lease (its first phase committed): give the lease back
		// now, as after any transient failure, rather than leave the key held until it runs out.
	}
	pending := e.done != nil && e.done.outcome == phases.CallOutcomePending
	if limit := e.c.maxAttempts(e.op); !pending && e.spent >= limit {
		return e.park(ctx, ParkedAttemptsExhausted, fmt.Sprintf("attempts exhausted (%d of %d): %v", e.spent, limit, err))
	}
	delay := e.c.cfg.RetryDelay(e.spent)
	if after, ok := phases.RetryDelay(err); ok {
		delay = after
	}
	w := &keyWrite{kind: writeRelease, status: KeyStatusStarted, recoveryPoint: e.rp, state: e.committed,
		lastError: err.Error(), retryIn: delay, unspent: pending, done: e.done}
	if _, _, werr := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w); errors.Is(werr, ErrLeaseLost) {
		return e.leaseLost(ctx)
	} else if werr != nil {
		e.c.cfg.Logger.WarnContext(ctx, "could not release the lease early; it expires on its own", "operation", e.op.Name, "key", e.req.Key, "error", werr)
		delay = max(delay, time.Until(e.leaseEnd))
	}
	e.done = nil
	e.stage = stageEnded
	e.traceRetry(ctx, delay, err)
	return nil, transient(err, delay)
}

// claimedByUs reports whether the stored key (e.head) is the one this execution's claim wrote,
// under its token. If the question fails, it is not: the key is answered as a duplicate's.
func (e *execution) claimedByUs(ctx context.Context) bool {
	if !e.h.token.Valid || (e.head.Status != KeyStatusStarted && e.head.Status != KeyStatusCompleted) {
		return false
	}
	ours, err := keyWrittenBy(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, &e.h.token)
	return err == nil && ours
}

// leaseLost stops an execution whose lease another took over (a zombie): it writes nothing more.
// A request is answered from the key as it is now: the stored response once the other execution
// finished (not as a replay: this request held the key), in progress while it runs, parked if it
// parked the key. A resume reports ErrLeaseLost.
func (e *execution) leaseLost(ctx context.Context) (*Result, error) {
	e.c.cfg.Logger.WarnContext(ctx, "lease taken over by another execution; this one stops", "operation", e.op.Name, "key", e.req.Key)
	e.stage = stageEnded
	if e.by != byClient {
		return nil, ErrLeaseLost
	}
	return e.answerExisting(ctx, false)
}

// park marks the key failed for an operator, keeping its recovery point and committed values.
func (e *execution) park(ctx context.Context, reason ParkedReason, msg string) (*Result, error) {
	w := &keyWrite{kind: writePark, status: KeyStatusParked, recoveryPoint: e.rp, state: e.committed, lastError: msg,
		reason: reason, done: e.done}
	if _, _, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return e.leaseLost(ctx)
		}
		return nil, transient(fmt.Errorf("error parking key (%s): %w", msg, err), time.Until(e.leaseEnd))
	}
	e.done = nil
	e.traceParked(ctx, reason, msg)
	e.c.cfg.Logger.ErrorContext(ctx, "key parked", "operation", e.op.Name, "key", e.req.Key, "reason", reason, "error", msg)
	e.c.observer.Parked(e.op.Name, reason)
	return nil, &ParkedError{Reason: reason, LastError: msg}
}

// errorBody is the body of every error pgsaga answers or stores: the problem details of
// ProblemBody, without extension members of the caller's.
func errorBody(status int, code, message string) []byte {
	return ProblemBody(status, code, message, nil)
}
