package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// errNotSingleTransaction is returned by RunTx for an operation with more than one step.
var errNotSingleTransaction = errors.New("RunTx runs single-transaction operations only (one atomic phase)")

// RunTx runs a single-transaction operation inside the caller's transaction: the claim of the
// key, the effect and the stored response commit when the caller commits, together with the
// caller's own writes, or not at all. It answers like Run (replay, ErrKeyReused,
// *InProgressError, *InvalidRequestError), except that it never takes over a key and never
// parks one: a transient or permanent failure rolls back to where RunTx began and is returned.
// Use READ COMMITTED: a duplicate that commits while tx waits on the key is read by a new
// statement snapshot.
func (c *Client) RunTx(ctx context.Context, tx pgx.Tx, operation string, req *Request) (*Result, error) {
	res, err := c.runTx(ctx, tx, operation, req)
	return c.observed(operation, res, err)
}

func (c *Client) runTx(ctx context.Context, tx pgx.Tx, operation string, req *Request) (*Result, error) {
	op, hash, err := c.prepare(operation, req)
	if err != nil {
		return nil, err
	}
	if !singleTransaction(op) {
		return nil, fmt.Errorf("%w: %q", errNotSingleTransaction, op.Name)
	}
	e := c.newExecution(op, req, hash, byClient)
	ctx = e.traceRequest(ctx)
	return e.traced(e.runTx(ctx, tx))
}

// runTx is RunTx's execution, in tx.
func (e *execution) runTx(ctx context.Context, tx pgx.Tx) (*Result, error) {
	if e.op.Validate != nil {
		if verr := e.op.Validate(e.req.Body); verr != nil {
			return e.refuseInvalid(ctx, tx, verr, false)
		}
	}
	savepoint, err := tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("error creating savepoint: %w", err)
	}
	defer func() { _ = savepoint.Rollback(ctx) }()

	resp, err := e.effectTx(ctx, savepoint)
	if err != nil {
		reject, ok := rejected(err)
		if answer, stored := refusal(err); answer != nil {
			if !stored {
				return nil, &InvalidRequestError{Err: errors.New(answer.message)}
			}
			reject, ok = *answer, true
		}
		if !ok {
			return nil, err
		}
		// The effect's writes go; the business outcome is what gets stored.
		if err := savepoint.Rollback(ctx); err != nil {
			return nil, err
		}
		resp = rejectResponse(reject).response()
		if savepoint, err = tx.Begin(ctx); err != nil {
			return nil, fmt.Errorf("error creating savepoint: %w", err)
		}
	}
	w := e.advance("", resp)
	w.orNothing = true
	_, won, err := writeKey(ctx, savepoint, &e.h, e.req, e.hash, w)
	if errors.Is(err, errTombstoned) {
		if err := savepoint.Rollback(ctx); err != nil {
			return nil, err
		}
		return e.expired(ctx, tx)
	}
	if err != nil {
		return nil, err
	}
	if !won {
		if err := savepoint.Rollback(ctx); err != nil {
			return nil, err
		}
		found, err := readHead(ctx, tx, e.req.Scope, e.req.Key, e.keyHead())
		switch {
		case err != nil:
			return nil, err
		case !found:
			return nil, ErrKeyNotFound
		}
		return e.decide(ctx, e.head, decideOpts{})
	}
	if err := savepoint.Commit(ctx); err != nil {
		return nil, err
	}
	return &Result{Response: resp}, nil
}

// effectTx runs a single-transaction operation's phase in tx and returns the response to store.
func (e *execution) effectTx(ctx context.Context, tx pgx.Tx) (*Response, error) {
	step := runstate.Step(e.op.Steps[0])
	phaseCtx, span := e.tracePhase(ctx, step.Name())
	err := step.Atomic()(phaseCtx, tx, e.runState())
	endSpan(span, err)
	if err != nil {
		return nil, err
	}
	resp := e.stored()
	if resp == nil {
		return nil, phases.Permanent(fmt.Errorf("operation %q ran without a response", e.op.Name))
	}
	return resp, nil
}
