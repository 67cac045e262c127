package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/internal/sibling"
)

// The statements that take and keep leases on pgsaga_key: heartbeats, takeovers, the worker's
// claims and the sweep's reservations.

// newToken is a fresh fencing token. It is sent as pgtype.UUID (binary, 16 bytes): pgx sends a
// google/uuid.UUID through its text form, which costs 19 allocations per statement.
func newToken() pgtype.UUID { return pgtype.UUID{Bytes: uuid.New(), Valid: true} }

// heartbeat renews the lease of a key whose call step runs, journals window as the attempt's
// in-flight window when it is longer than the one journaled (in the key row when inRow), and
// returns the lease left.
func heartbeat(ctx context.Context, q keystore.DBTX, h *holder, lease time.Duration, step string, window time.Duration, inRow bool) (time.Duration, error) {
	var (
		leftMs int64
		err    error
	)
	if inRow {
		var row keystore.HeartbeatCallInRowRow
		row, err = keystore.New(q).HeartbeatCallInRow(ctx, &keystore.HeartbeatCallInRowParams{
			Key: h.key, LeaseMs: lease.Milliseconds(), TenantID: h.scope.Tenant, ActorID: h.scope.Actor,
			Attempt: int32(h.attempt), Step: step, WindowMs: ceilMillis(window), LeaseToken: h.token})
		leftMs = row.LeaseLeftMs
	} else {
		var row keystore.HeartbeatRow
		row, err = keystore.New(q).Heartbeat(ctx, &keystore.HeartbeatParams{
			Key: h.key, LeaseMs: lease.Milliseconds(), TenantID: h.scope.Tenant, ActorID: h.scope.Actor,
			LeaseToken: h.token, WindowMs: ceilMillis(window), Step: step, Attempt: int32(h.attempt)})
		leftMs = row.LeaseLeftMs
	}
	if isFence(err) {
		return 0, ErrLeaseLost
	}
	if err != nil {
		return 0, err
	}
	return time.Duration(leftMs) * time.Millisecond, nil
}

// takeOverParams say which keys a takeover may take.
type takeOverParams struct {
	// ops are the operation names (with aliases) the taker can run.
	ops []string
	// due requires the key's next attempt time to have passed (a client retry, the worker);
	// an operator's resume ignores the schedule.
	due bool
	// parked also takes a parked key, with a fresh attempt budget (an operator's resume).
	parked bool
	// by records an operator's resume in the key's history.
	by string
	// calls journal the call a taken key goes on with, when its recovery point comes right
	// before one.
	calls *resumeCalls
}

// resumeCalls map the recovery points that come right before an external call to that call, for
// every operation a client runs: (stored operation name, stored recovery point) → the call
// step's name. Stored names include aliases, and "started" for an operation that begins with a
// call. A takeover journals the call in its own statement, so a resume that goes straight to a
// call sends it without a write of its own first.
type resumeCalls struct {
	operations, recoveryPoints, steps []string
	// maxAttempts and maxAgeMs are the operation's budget: an execution that will park at once
	// (its budget spent, or the key too old) sends no call, so nothing is journaled for it.
	maxAttempts []int32
	maxAgeMs    []int64
}

// takenKey is a key an execution took over, with what its takeover journaled.
type takenKey struct {
	*Key
	token pgtype.UUID
	// call is the call the takeover journaled for this attempt, nil when it journaled none;
	// prior are the key's earlier journal rows (JSON, every step) when it did.
	call  *callStart
	prior []byte
	// traceContext is the W3C traceparent of the request that claimed the key ("" when it was
	// claimed without tracing).
	traceContext string
}

// takenRow is a key a takeover took, as TakeOver, ClaimDue and ClaimKeys return it.
type takenRow = keystore.TakeOverRow

func taken(r *takenRow) (*takenKey, error) {
	t := &takenKey{token: r.LeaseToken, prior: r.PriorCalls, traceContext: r.TraceContext.String}
	var err error
	stored := keystore.PgsagaKey{
		TenantID:        r.TenantID,
		ActorID:         r.ActorID,
		Key:             r.Key,
		Operation:       r.Operation,
		Method:          r.Method,
		Path:            r.Path,
		RequestHash:     r.RequestHash,
		RequestBody:     r.RequestBody,
		Status:          r.Status,
		RecoveryPoint:   r.RecoveryPoint,
		State:           r.State,
		LockedUntil:     r.LockedUntil,
		Attempts:        r.Attempts,
		AttemptsUnspent: r.AttemptsUnspent,
		LastError:       r.LastError,
		NextAttemptAt:   r.NextAttemptAt,
		ParkedReason:    r.ParkedReason,
		ResponseStatus:  r.ResponseStatus,
		ResponseHeaders: r.ResponseHeaders,
		ResponseBody:    r.ResponseBody,
		CompletedAt:     r.CompletedAt,
		ExpiresAt:       r.ExpiresAt,
		CreatedAt:       r.CreatedAt,
		UpdatedAt:       r.UpdatedAt,
	}
	t.Key, err = keyOf(&stored, r.Leased, r.DbNow)
	if err != nil {
		return nil, err
	}
	if r.CallStep.Valid {
		t.call = &callStart{step: r.CallStep.String, reference: r.CallReference.String}
	}
	return t, nil
}

// takeOverKey takes a key over. When it cannot (the lease is live, it is not due, someone else
// took it first, the key finished or was parked, or its operation is not one of p.ops) it
// returns nil and the key as it is; ErrKeyNotFound when there is no such key.
func takeOverKey(ctx context.Context, q keystore.DBTX, scope Scope, key string, lease time.Duration, p *takeOverParams) (*takenKey, *keyHead, error) {
	calls := p.calls
	if calls == nil {
		calls = &resumeCalls{}
	}
	row, err := keystore.New(q).TakeOver(ctx, &keystore.TakeOverParams{
		LeaseToken: newToken(), LeaseMs: lease.Milliseconds(), TenantID: scope.Tenant, ActorID: scope.Actor, Key: key,
		Operations: p.ops, Due: p.due, Parked: p.parked,
		CallOperations: calls.operations, CallRecoveryPoints: calls.recoveryPoints, CallSteps: calls.steps,
		CallMaxAttempts: calls.maxAttempts, CallMaxAgeMs: calls.maxAgeMs,
		// An operator's resume (not due) journals the call even when the budget is spent: it
		// grants a fresh one.
		WithinBudget: p.due, ResumedBy: textOrNull(p.by)})
	if errors.Is(err, pgx.ErrNoRows) {
		var h keyHead
		found, err := readHead(ctx, q, scope, key, &h)
		switch {
		case err != nil:
			return nil, nil, err
		case !found:
			return nil, nil, ErrKeyNotFound
		}
		return nil, &h, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("error taking over key: %w", err)
	}
	t, err := taken(&row)
	if err != nil {
		return nil, nil, fmt.Errorf("error taking over key: %w", err)
	}
	return t, nil, nil
}

// claimDue claims up to limit due keys of ops. The caller must start every one at once: their
// leases run from now.
func claimDue(ctx context.Context, db keystore.DBTX, ops []string, calls *resumeCalls, lease time.Duration, limit int) ([]*takenKey, error) {
	rows, err := keystore.New(db).ClaimDue(ctx, &keystore.ClaimDueParams{
		LeaseMs: lease.Milliseconds(), Operations: ops, MaxKeys: int32(limit),
		CallOperations: calls.operations, CallRecoveryPoints: calls.recoveryPoints, CallSteps: calls.steps,
		CallMaxAttempts: calls.maxAttempts, CallMaxAgeMs: calls.maxAgeMs, WithinBudget: true})
	if err != nil {
		return nil, fmt.Errorf("error claiming due keys: %w", err)
	}
	return takenAll(rows, "error claiming due keys")
}

// takenAll converts the rows of a claim of several keys (ClaimDue, ClaimKeys: the columns of
// TakeOver), wrapping any error in what.
func takenAll[R keystore.ClaimDueRow | keystore.ClaimKeysRow](rows []R, what string) ([]*takenKey, error) {
	out := make([]*takenKey, len(rows))
	for i := range rows {
		r := takenRow(rows[i])
		t, err := taken(&r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out[i] = t
	}
	return out, nil
}

// claimKeys claims those of refs that are due. The caller must start every one at once: their
// leases run from now.
func claimKeys(ctx context.Context, db keystore.DBTX, ops []string, calls *resumeCalls, lease time.Duration, refs []sibling.KeyRef) ([]*takenKey, error) {
	tenants, actors, keys := make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		tenants[i], actors[i], keys[i] = r.Tenant, r.Actor, r.Key
	}
	rows, err := keystore.New(db).ClaimKeys(ctx, &keystore.ClaimKeysParams{
		LeaseMs: lease.Milliseconds(), TenantIds: tenants, ActorIds: actors, Keys: keys, Operations: ops,
		CallOperations: calls.operations, CallRecoveryPoints: calls.recoveryPoints, CallSteps: calls.steps,
		CallMaxAttempts: calls.maxAttempts, CallMaxAgeMs: calls.maxAgeMs, WithinBudget: true})
	if err != nil {
		return nil, fmt.Errorf("error claiming keys: %w", err)
	}
	return takenAll(rows, "error claiming keys")
}

func reserveDue(ctx context.Context, tx pgx.Tx, ops []string, hold time.Duration, limit int) ([]sibling.KeyRef, error) {
	rows, err := keystore.New(tx).ReserveDue(ctx, &keystore.ReserveDueParams{
		HoldMs: hold.Milliseconds(), Operations: ops, MaxKeys: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("error reserving due keys: %w", err)
	}
	refs := make([]sibling.KeyRef, len(rows))
	for i, r := range rows {
		refs[i] = sibling.KeyRef{Tenant: r.TenantID, Actor: r.ActorID, Key: r.Key}
	}
	return refs, nil
}
