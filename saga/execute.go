package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// execution is one run of an operation's steps by this process, for one request or one resume.
type execution struct {
	c    *Client
	op   *phases.Operation
	req  *Request
	hash []byte
	// redacted is req as a claim stores it (Config.RedactRequest), made on first use.
	redacted *Request
	// st is the run's state, made when the execution first runs a step: a retry answered from
	// the stored key never needs one.
	st *runstate.State

	// held is true once this execution claimed or took over the key; persisted once the key row
	// exists. h is the hold: the key, the lease's fencing token and the attempt.
	held, persisted bool
	h               holder
	// operator is true for an operator's resume: no attempt budget, and a lost lease is
	// reported (ErrLeaseLost) rather than answered from the key.
	operator bool
	// resumer is true when no client waits for the answer (Resume, ResumeNextDue).
	resumer bool
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
	// waited is true once the request waited for an execution in flight (WaitInFlight).
	waited bool
	// reached are the recovery points this execution wrote, and when (estimate.go).
	reached  [maxReached]reached
	nreached int
	// caller is the context of the request's caller (nil for a resume no caller waits for):
	// it bounds what the execution does before it holds the key (callerBound).
	caller context.Context
	// answer is the response a step decided and the key stored: the operation is done.
	answer *Response
	// head is the key as a retry sees it, once the execution read it (nil before: a new key's
	// execution never reads it).
	head *keyHead
	// phaseCtx bounds the execution's phases, one after the other (phasectx.go); phaseCancel
	// ends the bound of a phase whose context could be cancelled from outside.
	phaseCtx    *phaseContext
	phaseCancel context.CancelFunc
	// span is the request's span, nil when tracing is off (or for a resume, whose span is its
	// own). by is the operator who resumes the key.
	span trace.Span
	by   string
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

func (c *Client) newExecution(op *phases.Operation, req *Request, hash []byte) *execution {
	return &execution{
		c: c, op: op, req: req, hash: hash, rp: phases.RecoveryPointStarted, spent: 1,
		h: holder{scope: req.Scope, key: req.Key, attempt: 1},
	}
}

// keyHead is where the execution reads the key into.
func (e *execution) keyHead() *keyHead {
	if e.head == nil {
		e.head = &keyHead{}
	}
	return e.head
}

// state is the run's state, made on first use for a new key.
func (e *execution) state() *runstate.State {
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
	e.state()
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

// atomic runs phase i in one transaction whose COMMIT travels with the key's write: for a key
// not yet stored the claim itself (a duplicate rolls the phase back, and is answered from the
// key as it is: errDuplicate), otherwise the advance fenced by the lease token. The write carries
// the outcome of the call just made and, when a call follows, that call's journal row with a
// renewed lease. A phase that responds stores the answer with the key (e.answer).
func (e *execution) atomic(ctx context.Context, i int) error {
	step := runstate.Step(e.op.Steps[i])
	ctx = e.bound(ctx)
	defer e.unbound()
	tx, err := beginPhase(ctx, e.c.cfg.DB)
	if err != nil {
		return fmt.Errorf("error beginning phase %q: %w", step.Name(), err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	err = step.Atomic()(ctx, tx, e.st)
	if i == 0 && !e.persisted && err == nil {
		e.c.learn(e.op, !tx.Begun())
	}
	if err != nil {
		e.st.Reset(e.committed)
		return confirmReads(ctx, tx, step.Name(), err)
	}
	resp := e.stored()
	w := e.advance(step.Name(), resp)
	if next, ok := e.callAt(i + 1); ok && resp == nil {
		start, err := e.callStart(next)
		if err != nil {
			e.st.Reset(e.committed)
			return err
		}
		w.next = start
	}
	w.alone = !tx.Begun()
	a := getArgs()
	defer putArgs(a)
	s, err := w.statement(&e.h, e.requestFor(w), e.hash, a)
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	sent := time.Now()
	out, err := commitPhase(ctx, tx, s, e.persisted)
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	e.wrote(w, out, sent)
	e.answer = resp
	return nil
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
	if !e.persisted {
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

// wrote records that w committed: the key is held and stored, its values and recovery point are
// the committed ones, the call outcome it carried is journaled.
func (e *execution) wrote(w *keyWrite, out *written, sent time.Time) {
	if !e.persisted {
		e.st.SetCreatedAt(out.createdAt)
	}
	e.held, e.persisted = true, true
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
