package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// outcomeValue holds a decided outcome while compensations run, so that a resumed execution
// finishes with the same answer. It is reserved: phases.Value names cannot start with "_pgsaga".
const outcomeValue = "_pgsaga_outcome"

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

func (r *storedResponse) response() *Response {
	return &Response{Status: r.Status, Header: r.Header, Body: r.Body}
}

// decidedOutcome reads the outcome a key under compensation was decided with.
func (e *execution) decidedOutcome() (*outcome, error) {
	raw, ok := e.st.Value(outcomeValue)
	if !ok {
		return nil, errors.New("the key is being compensated but has no recorded outcome")
	}
	out := &outcome{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("error decoding the recorded outcome: %w", err)
	}
	return out, nil
}

// compensate runs the undo of every compensable phase at or before index from, newest first,
// then stores out: a business outcome completes the key, a permanent failure parks it at
// recovery point "compensated". Before the first undo, the outcome is recorded with the key and
// the recovery point moves to compensate:<phase>; each undo then commits in one transaction with
// the move to the next undo (or to the end). So a crash between them resumes at the next undo
// with the same outcome, and every undo commits exactly once.
func (e *execution) compensate(ctx context.Context, from int, out *outcome) (*Result, error) {
	if e.stage == stageNew {
		return e.finishUnstored(ctx, out)
	}
	var undo []int
	for j := min(from, len(e.op.Steps)-1); j >= 0; j-- {
		if runstate.Step(e.op.Steps[j]).Compensation() != nil {
			undo = append(undo, j)
		}
	}
	if len(undo) == 0 {
		return e.finishCompensated(ctx, out)
	}
	if first := compensatePoint(e.op, undo[0]); e.rp != first {
		if err := e.st.SetValue(outcomeValue, out); err != nil {
			return nil, err
		}
		w := &keyWrite{kind: writeAdvance, status: KeyStatusStarted, recoveryPoint: first, state: e.st.Values(),
			lease: e.c.cfg.Lease, done: e.done}
		sent := time.Now()
		written, _, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w)
		if err != nil {
			e.st.Reset(e.committed)
			return e.failCompensation(ctx, err)
		}
		e.wrote(w, written, sent)
	}
	for n, j := range undo {
		next := e.final(out)
		if n+1 < len(undo) {
			next = &keyWrite{kind: writeAdvance, status: KeyStatusStarted, recoveryPoint: compensatePoint(e.op, undo[n+1]),
				state: e.committed, lease: e.c.cfg.Lease}
		}
		undoCtx, span := e.traceCompensate(ctx, e.op.Steps[j].Name())
		err := e.undo(undoCtx, j, next)
		endSpan(span, err)
		if err != nil {
			return e.failCompensation(ctx, err)
		}
	}
	return e.finished(out)
}

func compensatePoint(op *phases.Operation, i int) string {
	return phases.RecoveryPointCompensatePrefix + op.Steps[i].Name()
}

// failCompensation handles a compensation that did not commit: a lost lease stops, anything
// else is retried from the pending undo (an undo that fails permanently parks the key there).
func (e *execution) failCompensation(ctx context.Context, err error) (*Result, error) {
	switch {
	case errors.Is(err, ErrLeaseLost):
		return e.leaseLost(ctx)
	case !phases.IsRetryable(err):
		return e.park(ctx, ParkedPermanent, "a compensation failed permanently: "+err.Error())
	}
	return e.transient(ctx, err)
}

// undo runs phase j's compensation in one transaction that commits with next, fenced.
func (e *execution) undo(ctx context.Context, j int, next *keyWrite) error {
	step := runstate.Step(e.op.Steps[j])
	ctx = e.bound(ctx)
	defer e.unbound()
	tx, err := beginPhase(ctx, e.c.cfg.DB, nil)
	if err != nil {
		return fmt.Errorf("error beginning compensation of %q: %w", step.Name(), err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := step.Compensation()(ctx, tx, e.st); err != nil {
		e.st.Reset(e.committed)
		return confirmReads(ctx, tx, "compensation of "+step.Name(), fmt.Errorf("error compensating %q: %w", step.Name(), err))
	}
	next.state = e.st.Values()
	s, err := next.statement(&e.h, e.requestFor(next), e.hash)
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	defer s.release()
	sent := time.Now()
	out, err := commitPhase(ctx, tx, s, true)
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	e.wrote(next, out, sent)
	return nil
}

// final is the key's last write for out: completed with the business outcome's response, or
// parked (permanent) with every compensation done.
func (e *execution) final(out *outcome) *keyWrite {
	if out.Response != nil {
		return &keyWrite{kind: writeComplete, status: KeyStatusCompleted, recoveryPoint: phases.RecoveryPointFinished,
			state: e.committed, response: out.Response.response(), retention: e.c.retention(e.op), done: e.done}
	}
	return &keyWrite{kind: writePark, status: KeyStatusParked, recoveryPoint: phases.RecoveryPointCompensated,
		state: e.committed, lastError: out.Error, reason: ParkedPermanent, done: e.done}
}

// finishCompensated writes out when no compensation is (or is left) to run. A parked key keeps
// its recovery point: the phase it reached when nothing was compensated (an operator who fixed
// the cause can resume from there), or "compensated" when every compensation ran.
func (e *execution) finishCompensated(ctx context.Context, out *outcome) (*Result, error) {
	w := e.final(out)
	if out.Response == nil {
		w.recoveryPoint = e.rp
	}
	sent := time.Now()
	written, _, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.req, e.hash, w)
	if err != nil {
		return e.failCompensation(ctx, err)
	}
	e.wrote(w, written, sent)
	return e.finished(out)
}

func (e *execution) finished(out *outcome) (*Result, error) {
	if out.Response != nil {
		return &Result{Response: out.Response.response(), Resumed: e.st.Resumed()}, nil
	}
	e.c.observer.Parked(e.op.Name, ParkedPermanent)
	return nil, &ParkedError{Reason: ParkedPermanent, LastError: out.Error}
}

// finishUnstored stores an outcome decided before any phase committed, claiming the key with it.
func (e *execution) finishUnstored(ctx context.Context, out *outcome) (*Result, error) {
	w := e.final(out)
	e.claiming(w)
	w.orNothing, w.recoveryPoint = true, e.rp
	if out.Response != nil {
		w.recoveryPoint = phases.RecoveryPointFinished
	}
	written, won, err := writeKey(ctx, e.c.cfg.DB, &e.h, e.requestFor(w), e.hash, w)
	switch {
	case errors.Is(err, errTombstoned):
		return e.expired(ctx, e.c.cfg.DB)
	case err != nil:
		return e.transient(ctx, err)
	}
	if !won {
		return e.answerExisting(ctx, true)
	}
	e.wrote(w, written, time.Now())
	return e.finished(out)
}
