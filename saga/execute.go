package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// execution is one run of an operation's steps by this process, for one request or one resume.
type execution struct {
	c    *Client
	op   *phases.Operation
	req  *Request
	hash []byte
	st   *runstate.State

	// held is true once this execution claimed or took over the key; persisted once the key row
	// exists; token is the lease's fencing token.
	held, persisted bool
	token           uuid.UUID
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
	// answer is the response a step decided and the key stored: the operation is done.
	answer *Response
}

// journaledCall is a call whose journal row a write committed, with what it said of the call's
// earlier attempts.
type journaledCall struct {
	start   *callStart
	written *written
	at      time.Time // when the write returned
}

func (c *Client) newExecution(op *phases.Operation, req *Request, hash []byte) *execution {
	return &execution{
		c: c, op: op, req: req, hash: hash, token: uuid.New(), rp: phases.RecoveryPointStarted, spent: 1,
		st: runstate.New(runstate.Params{
			Tenant: req.Scope.Tenant, Actor: req.Scope.Actor, Key: req.Key, Operation: op.Name,
			Method: req.Method, Path: req.Path, Body: req.Body, Attempt: 1,
		}),
	}
}

// leaseFrom records a lease of left (as the database measured it right after writing it) from a
// write sent at sent.
func (e *execution) leaseFrom(sent time.Time, left time.Duration) { e.leaseEnd = sent.Add(left) }

// execute runs the steps from index from on. opened, when set, is the first phase's transaction,
// already begun.
func (e *execution) execute(ctx context.Context, from int, opened *phaseTx) (*Result, error) {
	for i := from; i < len(e.op.Steps); i++ {
		step := runstate.Step(e.op.Steps[i])
		var err error
		start := time.Now()
		if step.Atomic() != nil {
			err = e.atomic(ctx, i, opened)
			opened = nil
		} else {
			err = e.call(ctx, i)
		}
		e.c.observer.Step(e.op.Name, step.Name(), time.Since(start))
		if err != nil {
			return e.fail(ctx, i, err)
		}
		if e.answer != nil {
			e.c.observer.Request(e.op.Name, OutcomeExecuted)
			return &Result{Response: e.answer, Resumed: e.st.Resumed()}, nil
		}
	}
	return e.fail(ctx, len(e.op.Steps), phases.Permanent(fmt.Errorf("operation %q ran every step without a response", e.op.Name)))
}

// atomic runs phase i in one transaction (opened, or a new one) whose COMMIT travels with the
// key's write: for a key not yet stored the claim itself (a duplicate rolls the phase back),
// otherwise the advance fenced by the lease token. The write carries the outcome of the call
// just made and, when a call follows, that call's journal row with a renewed lease. A phase that
// responds stores the answer with the key (e.answer).
func (e *execution) atomic(ctx context.Context, i int, opened *phaseTx) error {
	step := runstate.Step(e.op.Steps[i])
	ctx, cancel := context.WithTimeout(ctx, e.c.cfg.Lease)
	defer cancel()
	p := opened
	if p == nil {
		var err error
		if p, _, err = beginPhase(ctx, e.c.cfg.DB, nil); err != nil {
			return fmt.Errorf("error beginning phase %q: %w", step.Name(), err)
		}
	}
	defer p.rollback(ctx)

	if err := step.Atomic()(ctx, p.tx, e.st); err != nil {
		e.st.Reset(e.committed)
		return err
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
	sent := time.Now()
	var (
		out *written
		err error
	)
	if e.persisted {
		out, err = p.fenceAndCommit(ctx, e.req.Scope, e.req.Key, e.token, w)
	} else {
		out, err = p.claimAndCommit(ctx, e.req, e.hash, e.token, w)
	}
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	e.wrote(w, out, sent)
	e.answer = resp
	return nil
}

// advance is the key's next state after phase name committed, with resp when it finished.
func (e *execution) advance(name string, resp *Response) *keyWrite {
	if resp != nil {
		return &keyWrite{status: KeyStatusCompleted, recoveryPoint: phases.RecoveryPointFinished,
			state: e.st.Values(), response: resp, retention: e.c.retention(e.op), done: e.done}
	}
	return &keyWrite{status: KeyStatusStarted, recoveryPoint: name, state: e.st.Values(),
		lease: e.c.cfg.Lease, done: e.done}
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
	if w.next != nil {
		e.journaled = &journaledCall{start: w.next, written: out, at: time.Now()}
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
	resp := &Response{Status: r.Status, Header: r.Header.Clone(), Body: r.Body}
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
