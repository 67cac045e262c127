package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// ErrNotSingleTransaction is returned by RunTx for an operation with more than one step.
var ErrNotSingleTransaction = errors.New("RunTx runs single-transaction operations only (one atomic phase)")

// RunTx runs a single-transaction operation inside the caller's transaction: the claim of the
// key, the effect and the stored response commit when the caller commits, together with the
// caller's own writes, or not at all. It answers like Run (replay, ErrKeyReused,
// *InProgressError, *InvalidRequestError), except that it never takes over a key and never
// parks one: a transient or permanent failure rolls back to where RunTx began and is returned.
// Use READ COMMITTED: a duplicate that commits while tx waits on the key is read by a new
// statement snapshot.
func (c *Client) RunTx(ctx context.Context, tx pgx.Tx, operation string, req *Request) (*Result, error) {
	op, hash, err := c.prepare(operation, req)
	if err != nil {
		return nil, err
	}
	if !op.SingleTransaction() {
		return nil, fmt.Errorf("%w: %q", ErrNotSingleTransaction, op.Name)
	}
	if res, refused, err := c.refuseInvalid(ctx, tx, op, req, hash, false); refused {
		return res, err
	}

	e := c.newExecution(op, req, hash)
	savepoint, err := tx.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("error creating savepoint: %w", err)
	}
	defer func() { _ = savepoint.Rollback(ctx) }()

	resp, err := e.effectTx(ctx, savepoint, op.Steps[0])
	if err != nil {
		var reject *phases.RejectError
		if !errors.As(err, &reject) {
			return nil, err
		}
		// The effect's writes go; the business outcome is what gets stored.
		if err := savepoint.Rollback(ctx); err != nil {
			return nil, err
		}
		body, _ := json.Marshal(map[string]string{"error": reject.Code, "message": reject.Message})
		resp = &Response{Status: reject.Status, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: body}
		if savepoint, err = tx.Begin(ctx); err != nil {
			return nil, fmt.Errorf("error creating savepoint: %w", err)
		}
	}
	_, won, err := insertKey(ctx, savepoint, req, hash, e.token, e.writeFor("", resp))
	if err != nil {
		return nil, err
	}
	if !won {
		if err := savepoint.Rollback(ctx); err != nil {
			return nil, err
		}
		k, err := lookupKey(ctx, tx, req.Scope, req.Key)
		if err != nil {
			return nil, err
		}
		return c.decide(ctx, op, req, hash, k, false)
	}
	if err := savepoint.Commit(ctx); err != nil {
		return nil, err
	}
	c.metrics.request(op.Name, outcomeExecuted)
	return &Result{Response: resp}, nil
}

// effectTx runs a single-transaction operation's phase in tx and returns the response to store.
func (e *execution) effectTx(ctx context.Context, tx pgx.Tx, step phases.Step) (*Response, error) {
	if err := step.AtomicFunc()(ctx, tx, e.run); err != nil {
		return nil, err
	}
	resp := e.stored()
	if resp == nil {
		return nil, phases.Permanent(fmt.Errorf("operation %q ran without a response", e.op.Name))
	}
	runstate.ClearResponse(e.run)
	return resp, nil
}
