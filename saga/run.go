package saga

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// outcomeStateKey holds a decided outcome while compensations run, so that a resumed execution
// finishes with the same answer.
const outcomeStateKey = "_pgsaga_outcome"

// errDuplicate means the key turned out to exist already: the execution wrote nothing and the
// request must be answered from the stored key.
var errDuplicate = errors.New("key already claimed")

// Run executes an operation under req's key and returns its response.
//
// The first request for a key runs the operation's steps; each atomic phase commits with the
// key's recovery point. A retry of a completed key replays the stored response (Replayed). A key
// reused with another method, path or body returns ErrKeyReused; one whose lease another
// execution holds returns an *InProgressError; a started key whose lease expired is taken over
// and resumed from its recovery point. A body that fails the operation's validation returns an
// *InvalidRequestError and stores nothing. A transient failure returns a *TransientError and
// stores nothing. A parked key returns ErrParked.
//
// The execution is detached from ctx's cancellation: a client that goes away does not cut an
// operation between a call and the phase that records it. Each phase and call has its own bound.
func (c *Client) Run(ctx context.Context, operation string, req *Request) (*Result, error) {
	op, hash, err := c.prepare(operation, req)
	if err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	if res, refused, err := c.refuseInvalid(ctx, c.cfg.DB, op, req, hash, true); refused {
		return res, err
	}

	// The key is read in the round trip that begins the first phase: a retry (replay, 422, 409,
	// parked, takeover) is answered from that read with nothing written, a new key runs the
	// phase in the transaction already open.
	e := c.newExecution(op, req, hash)
	var first *phaseTx
	if op.Steps[0].IsAtomic() {
		p, k, err := beginPhase(ctx, c.cfg.DB, req)
		if err != nil {
			c.metrics.request(op.Name, outcomeUnavailable)
			return nil, &TransientError{Err: err}
		}
		if k != nil {
			p.rollback(ctx)
			return c.decide(ctx, op, req, hash, k, true)
		}
		first = p
	} else if k, err := lookupKey(ctx, c.cfg.DB, req.Scope, req.Key); err == nil {
		return c.decide(ctx, op, req, hash, k, true)
	} else if !errors.Is(err, ErrKeyNotFound) {
		return nil, &TransientError{Err: err}
	}
	return e.runFrom(ctx, 0, first)
}

// prepare finds the operation, checks the request and fingerprints its body: what Run and RunTx
// do before touching the database.
func (c *Client) prepare(operation string, req *Request) (*phases.Operation, []byte, error) {
	op, err := c.operation(operation)
	if err != nil {
		return nil, nil, err
	}
	if err := checkRequest(req); err != nil {
		return nil, nil, err
	}
	req.Operation = op.Name
	hash, err := Fingerprint(req.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return op, hash, nil
}

// refuseInvalid answers a body that fails the operation's validation, reporting refused. The
// key's fingerprint is checked first: a reused key answers 422 (or replays) even when this body
// is also invalid; an unknown key answers *InvalidRequestError and stores nothing.
func (c *Client) refuseInvalid(ctx context.Context, q queryer, op *phases.Operation, req *Request, hash []byte, mayTakeOver bool) (*Result, bool, error) {
	if op.Validate == nil {
		return nil, false, nil
	}
	verr := op.Validate(req.Body)
	if verr == nil {
		return nil, false, nil
	}
	k, err := lookupKey(ctx, q, req.Scope, req.Key)
	switch {
	case errors.Is(err, ErrKeyNotFound):
		c.metrics.request(op.Name, outcomeRejected)
		return nil, true, &InvalidRequestError{Err: verr}
	case err != nil:
		return nil, true, &TransientError{Err: err}
	}
	res, err := c.decide(ctx, op, req, hash, k, mayTakeOver)
	return res, true, err
}

func checkRequest(req *Request) error {
	if req == nil {
		return errors.New("saga: nil Request")
	}
	if err := ValidateKey(req.Key); err != nil {
		return err
	}
	if req.Scope.Tenant == "" || req.Scope.Actor == "" || len(req.Scope.Tenant) > 64 || len(req.Scope.Actor) > 64 {
		return errors.New("saga: Request.Scope needs a tenant and an actor of 1-64 characters")
	}
	if req.Method == "" || req.Path == "" {
		return errors.New("saga: Request.Method and Request.Path are required")
	}
	return nil
}

// answerExisting answers a request whose key is already stored: mismatch, replay, in progress,
// parked, or a takeover of an expired lease followed by a resume.
func (c *Client) answerExisting(ctx context.Context, op *phases.Operation, req *Request, hash []byte, mayTakeOver bool) (*Result, error) {
	k, err := lookupKey(ctx, c.cfg.DB, req.Scope, req.Key)
	if errors.Is(err, ErrKeyNotFound) {
		// Deleted between the conflict and this read (retention GC): the client may retry.
		return nil, &TransientError{Err: errors.New("key vanished while being read; retry")}
	}
	if err != nil {
		return nil, &TransientError{Err: err}
	}
	return c.decide(ctx, op, req, hash, k, mayTakeOver)
}

func (c *Client) decide(ctx context.Context, op *phases.Operation, req *Request, hash []byte, k *Key, mayTakeOver bool) (*Result, error) {
	if k.Operation != op.Name || k.Method != req.Method || k.Path != req.Path || !bytes.Equal(k.RequestHash, hash) {
		c.metrics.request(op.Name, outcomeMismatch)
		return nil, ErrKeyReused
	}
	switch k.Status {
	case KeyStatusCompleted:
		c.metrics.request(op.Name, outcomeReplayed)
		return &Result{Response: k.Response, Replayed: true}, nil
	case KeyStatusFailed:
		c.metrics.request(op.Name, outcomeParked)
		return nil, ErrParked
	}
	if k.Leased && op.WaitInFlight > 0 && !waited(ctx) {
		// The operation prefers an answer to a 409: wait, bounded, for the execution in flight.
		later, err := c.waitForKey(ctx, req.Scope, req.Key, op.WaitInFlight)
		if err != nil {
			return nil, &TransientError{Err: err}
		}
		return c.decide(context.WithValue(ctx, waitedKey{}, true), op, req, hash, later, mayTakeOver)
	}
	if k.Leased || !mayTakeOver {
		c.metrics.request(op.Name, outcomeInProgress)
		return nil, inProgress(k)
	}
	taken, err := takeOverKey(ctx, c.cfg.DB, req.Scope, req.Key, c.cfg.Lease, false, c.opNames)
	if errors.Is(err, ErrInProgress) {
		// Someone else took it over, or it finished meanwhile: answer from what is there now.
		return c.decide(ctx, op, req, hash, taken, false)
	}
	if err != nil {
		return nil, &TransientError{Err: err}
	}
	c.cfg.Logger.InfoContext(ctx, "taking over expired key", "operation", op.Name, "key", req.Key, "recovery_point", taken.RecoveryPoint, "attempt", taken.Attempts)
	return c.resume(ctx, op, taken)
}

// waitedKey marks a context whose request already waited for an in-flight execution once.
type waitedKey struct{}

func waited(ctx context.Context) bool { return ctx.Value(waitedKey{}) != nil }

// inProgress answers a duplicate of an execution in flight. It suggests retrying in a second:
// the execution usually finishes well before its lease (which only bounds a dead one).
func inProgress(k *Key) error {
	e := &InProgressError{RetryAfter: time.Second}
	if k.LockedUntil != nil {
		e.LeaseRemaining = max(k.LockedUntil.Sub(k.DBNow), 0)
	}
	return e
}

// ResumeOpts are optional settings for Resume.
type ResumeOpts struct {
	// Parked also resumes a key parked as failed (an operator's decision).
	Parked bool
}

// Resume continues a started key whose lease expired (or, with opts.Parked, a parked key) from
// its recovery point, through the remaining phases, and returns the final response. A completed
// key returns its stored response with Replayed set. A live lease returns an *InProgressError.
func (c *Client) Resume(ctx context.Context, scope Scope, key string, opts *ResumeOpts) (*Result, error) {
	if opts == nil {
		opts = &ResumeOpts{}
	}
	ctx = context.WithoutCancel(ctx)
	// The takeover only touches keys of this client's operations: a key it cannot run keeps its
	// lease and its attempts.
	taken, err := takeOverKey(ctx, c.cfg.DB, scope, key, c.cfg.Lease, opts.Parked, c.opNames)
	if errors.Is(err, ErrInProgress) {
		if _, opErr := c.operation(taken.Operation); opErr != nil {
			return nil, opErr
		}
		switch taken.Status {
		case KeyStatusCompleted:
			return &Result{Response: taken.Response, Replayed: true}, nil
		case KeyStatusFailed:
			return nil, ErrParked
		}
		return nil, inProgress(taken)
	}
	if err != nil {
		return nil, err
	}
	op, err := c.operation(taken.Operation)
	if err != nil {
		return nil, err
	}
	return c.resume(ctx, op, taken)
}

// ResumeClaimed continues a key whose lease the caller already took (the resumer claims keys in
// batches). k must carry the lease token the claim wrote.
func (c *Client) ResumeClaimed(ctx context.Context, k *Key) (*Result, error) {
	op, err := c.operation(k.Operation)
	if err != nil {
		return nil, err
	}
	return c.resume(context.WithoutCancel(ctx), op, k)
}

func (c *Client) resume(ctx context.Context, op *phases.Operation, k *Key) (*Result, error) {
	req := &Request{Scope: k.Scope, Key: k.Key, Method: k.Method, Path: k.Path, Body: k.RequestBody, Operation: k.Operation}
	e := c.newExecution(op, req, k.RequestHash)
	e.persisted = true
	e.token = k.LeaseToken
	e.committed = k.State
	e.rp = k.RecoveryPoint
	e.run = runstate.New(runstate.Params{
		Tenant: k.Scope.Tenant, Actor: k.Scope.Actor, Key: k.Key, Operation: k.Operation,
		Method: k.Method, Path: k.Path, Body: k.RequestBody, Resumed: true, Attempt: k.Attempts,
		CreatedAt: k.CreatedAt, State: maps.Clone(k.State),
	})
	c.metrics.resume(op.Name)

	if rest, ok := strings.CutPrefix(k.RecoveryPoint, phases.RecoveryPointCompensatePrefix); ok {
		i := stepIndex(op, rest)
		var out outcome
		if found, err := e.run.Get(outcomeStateKey, &out); err != nil || !found || i < 0 {
			return e.fail(ctx, len(op.Steps), phases.Permanent(fmt.Errorf("key at %q has no recorded outcome to compensate for", k.RecoveryPoint)))
		}
		return e.compensate(ctx, i, &out)
	}
	from := 0
	if k.RecoveryPoint != phases.RecoveryPointStarted {
		i := stepIndex(op, k.RecoveryPoint)
		if i < 0 {
			return e.fail(ctx, len(op.Steps), phases.Permanent(fmt.Errorf("operation %q has no step %q to resume after", op.Name, k.RecoveryPoint)))
		}
		from = i + 1
	}
	return e.runFrom(ctx, from, nil)
}

func stepIndex(op *phases.Operation, name string) int {
	for i, s := range op.Steps {
		if s.Name() == name {
			return i
		}
	}
	return -1
}

// execution is one run of an operation's steps by this process.
type execution struct {
	c    *Client
	op   *phases.Operation
	req  *Request
	hash []byte
	run  *runstate.Run
	// persisted is true once the key row exists; token is the lease's fencing token.
	persisted bool
	token     uuid.UUID
	// rp is the key's recovery point as last committed.
	rp string
	// committed is the saved state as last committed, restored when a phase rolls back.
	committed map[string]json.RawMessage
}

func (c *Client) newExecution(op *phases.Operation, req *Request, hash []byte) *execution {
	return &execution{
		c: c, op: op, req: req, hash: hash, token: uuid.New(), rp: phases.RecoveryPointStarted,
		run: runstate.New(runstate.Params{
			Tenant: req.Scope.Tenant, Actor: req.Scope.Actor, Key: req.Key, Operation: op.Name,
			Method: req.Method, Path: req.Path, Body: req.Body, Attempt: 1,
		}),
	}
}

// runFrom runs the steps from index from on. opened, when set, is the first phase's transaction,
// already begun.
func (e *execution) runFrom(ctx context.Context, from int, opened *phaseTx) (*Result, error) {
	for i := from; i < len(e.op.Steps); i++ {
		step := e.op.Steps[i]
		var (
			resp *Response
			err  error
		)
		start := time.Now()
		if step.IsAtomic() {
			resp, err = e.atomic(ctx, step, opened)
			opened = nil
		} else {
			resp, err = e.call(ctx, step)
		}
		e.c.metrics.step(e.op.Name, step.Name(), time.Since(start))
		if err != nil {
			return e.fail(ctx, i, err)
		}
		if resp != nil {
			e.c.metrics.request(e.op.Name, outcomeExecuted)
			return &Result{Response: resp, Resumed: e.run.Resumed()}, nil
		}
	}
	return e.fail(ctx, len(e.op.Steps), phases.Permanent(fmt.Errorf("operation %q ran every step without a response", e.op.Name)))
}

// rollback forgets what a failed phase set.
func (e *execution) rollback() {
	runstate.SetState(e.run, maps.Clone(e.committed))
	runstate.ClearResponse(e.run)
}

// stored turns the response a step set into the one to store and send (redacted once, so the
// first answer and every replay are the same bytes).
func (e *execution) stored() *Response {
	r := runstate.ResponseOf(e.run)
	if r == nil {
		return nil
	}
	resp := &Response{Status: r.Status, Header: r.Header.Clone(), Body: r.Body}
	if e.c.cfg.Redact != nil {
		if redacted := e.c.cfg.Redact(e.op.Name, resp); redacted != nil {
			resp = redacted
		}
	}
	kept := make(map[string][]string, len(e.c.cfg.StoredHeaders))
	for _, h := range e.c.cfg.StoredHeaders {
		if v := resp.Header.Values(h); len(v) > 0 {
			kept[h] = v
		}
	}
	resp.Header = kept
	return resp
}

// writeFor is the key's next state after step name committed, with resp when it finished.
func (e *execution) writeFor(recoveryPoint string, resp *Response) *keyWrite {
	if resp != nil {
		return &keyWrite{status: KeyStatusCompleted, recoveryPoint: phases.RecoveryPointFinished,
			state: runstate.StateOf(e.run), response: resp, retention: e.c.retention(e.op)}
	}
	return &keyWrite{status: KeyStatusStarted, recoveryPoint: recoveryPoint,
		state: runstate.StateOf(e.run), lease: e.c.cfg.Lease}
}

// atomic runs one phase in one transaction (opened, or a new one) whose COMMIT travels with the
// key's write: for a key not yet stored the claim itself (a duplicate rolls the phase back),
// otherwise the advance fenced by the lease token.
func (e *execution) atomic(ctx context.Context, step phases.Step, opened *phaseTx) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, e.c.cfg.Lease)
	defer cancel()
	p := opened
	if p == nil {
		var err error
		if p, _, err = beginPhase(ctx, e.c.cfg.DB, nil); err != nil {
			return nil, fmt.Errorf("error beginning phase %q: %w", step.Name(), err)
		}
	}
	defer p.rollback(ctx)

	if err := step.AtomicFunc()(ctx, p.tx, e.run); err != nil {
		e.rollback()
		return nil, err
	}
	resp := e.stored()
	w := e.writeFor(step.Name(), resp)
	var err error
	if e.persisted {
		err = p.fenceAndCommit(ctx, e.req.Scope, e.req.Key, e.token, w)
	} else {
		var createdAt time.Time
		createdAt, err = p.claimAndCommit(ctx, e.req, e.hash, e.token, w)
		runstate.SetCreatedAt(e.run, createdAt)
	}
	if err != nil {
		e.rollback()
		return nil, err
	}
	e.persisted = true
	e.committed = maps.Clone(runstate.StateOf(e.run))
	e.rp = w.recoveryPoint
	return resp, nil
}

// call runs an external call outside any transaction. A key not stored yet is claimed first,
// so a crash during the call leaves a started key for the worker.
func (e *execution) call(ctx context.Context, step phases.Step) (*Response, error) {
	if !e.persisted {
		w := e.writeFor(phases.RecoveryPointStarted, nil)
		createdAt, won, err := insertKey(ctx, e.c.cfg.DB, e.req, e.hash, e.token, w)
		if err != nil {
			return nil, err
		}
		if !won {
			return nil, errDuplicate
		}
		runstate.SetCreatedAt(e.run, createdAt)
		e.persisted = true
		e.committed = maps.Clone(runstate.StateOf(e.run))
	}
	callCtx, cancel := context.WithTimeout(ctx, e.c.cfg.CallTimeout)
	defer cancel()
	if err := step.CallFunc()(callCtx, e.run); err != nil {
		return nil, err
	}
	resp := e.stored()
	if resp == nil {
		return nil, nil
	}
	if err := writeKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.token, e.writeFor("", resp)); err != nil {
		return nil, err
	}
	return resp, nil
}

// outcome is a final answer decided while earlier phases still need compensating.
type outcome struct {
	// Response is stored when the operation ends in a business outcome.
	Response *storedResponse `json:"response,omitempty"`
	// Error parks the key when the operation failed permanently.
	Error string `json:"error,omitempty"`
}

type storedResponse struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header"`
	Body   []byte              `json:"body"`
}

// fail handles a step's error: a duplicate or lost lease is answered from the stored key; a
// rejection or permanent failure is compensated and stored; anything else is transient.
func (e *execution) fail(ctx context.Context, i int, err error) (*Result, error) {
	switch {
	case errors.Is(err, errDuplicate):
		return e.c.answerExisting(ctx, e.op, e.req, e.hash, true)
	case errors.Is(err, ErrLeaseLost):
		return e.leaseLost(ctx)
	}

	var reject *phases.RejectError
	if errors.As(err, &reject) {
		body, _ := json.Marshal(map[string]string{"error": reject.Code, "message": reject.Message})
		resp := &storedResponse{Status: reject.Status, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: body}
		return e.compensate(ctx, i-1, &outcome{Response: resp})
	}
	if !phases.IsRetryable(err) {
		e.c.cfg.Logger.ErrorContext(ctx, "operation failed permanently", "operation", e.op.Name, "key", e.req.Key, "error", err)
		return e.compensate(ctx, i-1, &outcome{Error: err.Error()})
	}

	return e.transient(ctx, err)
}

// transient handles a failure a retry may fix: nothing is stored, the lease is given back early
// with the next attempt scheduled in SQL, and the key is parked once its attempts are spent.
func (e *execution) transient(ctx context.Context, err error) (*Result, error) {
	e.c.cfg.Logger.WarnContext(ctx, "transient failure", "operation", e.op.Name, "key", e.req.Key, "attempt", e.run.Attempt(), "error", err)
	e.c.metrics.request(e.op.Name, outcomeUnavailable)
	if errors.Is(err, ErrLeaseLost) {
		return e.leaseLost(ctx)
	}
	if !e.persisted {
		// Nothing was stored. If a duplicate stored the key meanwhile, answer from it.
		if k, lookErr := lookupKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key); lookErr == nil {
			return e.c.decide(ctx, e.op, e.req, e.hash, k, false)
		}
		return nil, &TransientError{Err: err}
	}
	if e.run.Attempt() >= e.c.maxAttempts(e.op) {
		msg := fmt.Sprintf("attempts exhausted (%d): %v", e.run.Attempt(), err)
		return e.park(ctx, msg, err)
	}
	delay := e.c.cfg.RetryDelay(e.run.Attempt())
	var after *phases.RetryAfterError
	if errors.As(err, &after) {
		delay = after.After
	}
	if relErr := releaseKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.token, delay, err.Error()); errors.Is(relErr, ErrLeaseLost) {
		return e.leaseLost(ctx)
	} else if relErr != nil {
		e.c.cfg.Logger.WarnContext(ctx, "could not release lease early; it expires on its own", "operation", e.op.Name, "key", e.req.Key, "error", relErr)
	}
	return nil, &TransientError{Err: err}
}

// leaseLost stops an execution whose lease another took over (a zombie): it writes nothing more
// and answers from the key as it is now: the stored response once the other execution finished,
// in progress while it runs, parked if it parked the key.
func (e *execution) leaseLost(ctx context.Context) (*Result, error) {
	e.c.cfg.Logger.WarnContext(ctx, "lease taken over by another execution; this one stops", "operation", e.op.Name, "key", e.req.Key)
	return e.c.answerExisting(ctx, e.op, e.req, e.hash, false)
}

// park marks the key failed for an operator, keeping its recovery point and committed state.
func (e *execution) park(ctx context.Context, msg string, cause error) (*Result, error) {
	w := &keyWrite{status: KeyStatusFailed, recoveryPoint: e.rp, state: e.committed, lastError: msg}
	if err := writeKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.token, w); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return e.leaseLost(ctx)
		}
		return nil, &TransientError{Err: errors.Join(cause, err)}
	}
	e.c.cfg.Logger.ErrorContext(ctx, "key parked", "operation", e.op.Name, "key", e.req.Key, "error", msg)
	e.c.metrics.parked(e.op.Name)
	return nil, ErrParked
}

// compensate runs the undo of every compensable phase at or before index from, newest first,
// each in its own fenced transaction that also moves the recovery point to the next undo, then
// stores out: a business outcome completes the key, an error parks it. A crash in between
// resumes at the pending undo with the same outcome.
func (e *execution) compensate(ctx context.Context, from int, out *outcome) (*Result, error) {
	if !e.persisted {
		return e.finishUnstored(ctx, out)
	}
	var undo []int
	for j := min(from, len(e.op.Steps)-1); j >= 0; j-- {
		if s := e.op.Steps[j]; s.IsAtomic() && s.Compensation() != nil {
			undo = append(undo, j)
		}
	}
	if len(undo) > 0 {
		first := phases.RecoveryPointCompensatePrefix + e.op.Steps[undo[0]].Name()
		if e.rp != first {
			if err := e.run.Set(outcomeStateKey, out); err != nil {
				return nil, err
			}
			w := &keyWrite{status: KeyStatusStarted, recoveryPoint: first, state: runstate.StateOf(e.run), lease: e.c.cfg.Lease}
			if err := writeKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.token, w); err != nil {
				e.rollback()
				return e.transient(ctx, err)
			}
			e.committed, e.rp = maps.Clone(runstate.StateOf(e.run)), first
		}
	}
	for n, j := range undo {
		next := e.finalWrite(out)
		if n+1 < len(undo) {
			next = &keyWrite{status: KeyStatusStarted, recoveryPoint: phases.RecoveryPointCompensatePrefix + e.op.Steps[undo[n+1]].Name(),
				state: e.committed, lease: e.c.cfg.Lease}
		}
		if err := e.undoOne(ctx, e.op.Steps[j], next); err != nil {
			return e.transient(ctx, err)
		}
		e.rp = next.recoveryPoint
	}
	if len(undo) == 0 {
		if err := writeKey(ctx, e.c.cfg.DB, e.req.Scope, e.req.Key, e.token, e.finalWrite(out)); err != nil {
			return e.transient(ctx, err)
		}
	}
	return e.finished(out)
}

func (e *execution) undoOne(ctx context.Context, step phases.Step, next *keyWrite) error {
	ctx, cancel := context.WithTimeout(ctx, e.c.cfg.Lease)
	defer cancel()
	p, _, err := beginPhase(ctx, e.c.cfg.DB, nil)
	if err != nil {
		return fmt.Errorf("error beginning compensation of %q: %w", step.Name(), err)
	}
	defer p.rollback(ctx)
	if err := step.Compensation()(ctx, p.tx, e.run); err != nil {
		return fmt.Errorf("error compensating %q: %w", step.Name(), err)
	}
	return p.fenceAndCommit(ctx, e.req.Scope, e.req.Key, e.token, next)
}

func (e *execution) finalWrite(out *outcome) *keyWrite {
	if out.Response != nil {
		return &keyWrite{status: KeyStatusCompleted, recoveryPoint: phases.RecoveryPointFinished, state: e.committed,
			response: out.Response.response(), retention: e.c.retention(e.op)}
	}
	return &keyWrite{status: KeyStatusFailed, recoveryPoint: e.rp, state: e.committed, lastError: out.Error}
}

func (e *execution) finished(out *outcome) (*Result, error) {
	if out.Response != nil {
		e.c.metrics.request(e.op.Name, outcomeExecuted)
		return &Result{Response: out.Response.response(), Resumed: e.run.Resumed()}, nil
	}
	e.c.metrics.parked(e.op.Name)
	return nil, ErrParked
}

// finishUnstored stores an outcome decided before any phase committed, claiming the key with it.
func (e *execution) finishUnstored(ctx context.Context, out *outcome) (*Result, error) {
	w := e.finalWrite(out)
	_, won, err := insertKey(ctx, e.c.cfg.DB, e.req, e.hash, e.token, w)
	if err != nil {
		return e.transient(ctx, err)
	}
	if !won {
		return e.c.answerExisting(ctx, e.op, e.req, e.hash, true)
	}
	e.persisted = true
	return e.finished(out)
}

func (r *storedResponse) response() *Response {
	return &Response{Status: r.Status, Header: r.Header, Body: r.Body}
}
