package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// SettleParams is an operator's decision about a parked key.
type SettleParams struct {
	// Outcome is what happened: phases.SettleSucceeded or phases.SettleFailed. Required.
	Outcome phases.SettleOutcome
	// Note says why, for the key's history. Required.
	Note string
	// Reference is the provider's reference for what happened (a charge id). Optional; an
	// operation's settle hook may require it.
	Reference string
	// By is who decided (an operator's user name, "console"). Required.
	By string
}

func (p *SettleParams) validate() error {
	switch {
	case p == nil:
		return errors.New("saga: Settle needs SettleParams")
	case p.Outcome != phases.SettleSucceeded && p.Outcome != phases.SettleFailed:
		return fmt.Errorf("saga: SettleParams.Outcome must be %q or %q, got %q", phases.SettleSucceeded, phases.SettleFailed, p.Outcome)
	case p.Note == "":
		return errors.New("saga: SettleParams.Note is required: say why")
	case p.By == "":
		return errors.New("saga: SettleParams.By is required: say who decided")
	}
	return nil
}

// Settle finishes a parked key by an operator's decision: in one transaction it locks the key,
// runs its operation's settle hook (phases.Operation.Settle) with the key's saved values, stores
// the response the hook set, completes the key and records the decision in the key's history.
// The response is then replayed to the client like any other. It returns ErrKeyNotFound for a
// key that does not exist, and a *RefusedError, changing nothing, for a key that is not parked
// (RefusedNotParked), whose operation has no settle hook (RefusedNoSettleHook), or whose hook
// returned an error (RefusedBySettleHook).
func (c *Client) Settle(ctx context.Context, scope Scope, key string, p *SettleParams) (*Result, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	var (
		res  *Result
		span trace.Span // the settlement's, once the hook runs
	)
	err := pgx.BeginFunc(ctx, c.cfg.DB, func(tx pgx.Tx) error {
		var err error
		res, err = c.settleTx(ctx, tx, scope, key, p, &span)
		return err
	})
	endSpan(span, err)
	return res, err
}

// settleTx settles the key in tx; span is set to the settlement's span when the hook runs.
func (c *Client) settleTx(ctx context.Context, tx pgx.Tx, scope Scope, key string, p *SettleParams, span *trace.Span) (*Result, error) {
	k, stored, err := lockKeyToSettle(ctx, tx, scope, key)
	if err != nil {
		return nil, err
	}
	op, err := c.operation(k.Operation)
	if err != nil {
		return nil, err
	}
	switch {
	case op.Settle == nil:
		return nil, &RefusedError{Reason: RefusedNoSettleHook, detail: fmt.Sprintf("operation %q", op.Name)}
	case k.Status != KeyStatusParked:
		return nil, &RefusedError{Reason: RefusedNotParked, detail: "it is " + string(k.Status)}
	}
	ctx, *span = c.traceSettle(ctx, k, stored, p)
	st := runstate.New(runstate.Params{
		Tenant: k.Scope.Tenant, Actor: k.Scope.Actor, Key: k.Key, Operation: k.Operation,
		Method: k.Method, Path: k.Path, Body: k.RequestBody, Resumed: true, Attempt: k.Attempts,
		CreatedAt: k.CreatedAt, Values: k.State,
	})
	s := &phases.Settlement{Outcome: p.Outcome, Note: p.Note, Reference: p.Reference, By: p.By}
	if err := op.Settle(ctx, tx, (*phases.Run)(st), s); err != nil {
		return nil, &RefusedError{Reason: RefusedBySettleHook, Err: err}
	}
	resp := c.storedResponse(op, st.Response())
	if resp == nil {
		return nil, fmt.Errorf("the settle hook of %q set no response (it must call Run.Respond)", op.Name)
	}
	if err := settleKey(ctx, tx, k, st.Values(), resp, c.retention(op), p); err != nil {
		return nil, err
	}
	return &Result{Response: resp}, nil
}
