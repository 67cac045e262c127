package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/keystore"
)

// An operator's settlement of a parked key: the key read and locked, then completed with its
// decision recorded in the key's history.

// lockKeyToSettle reads and locks a key to settle, with the trace context of the request that
// claimed it; ErrKeyNotFound when there is none.
func lockKeyToSettle(ctx context.Context, tx pgx.Tx, scope Scope, key string) (*Key, string, error) {
	r, err := keystore.New(tx).LockKeyToSettle(ctx, &keystore.LockKeyToSettleParams{
		TenantID: scope.Tenant, ActorID: scope.Actor, Key: key})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", ErrKeyNotFound
	}
	if err != nil {
		return nil, "", err
	}
	k, err := keyOf(&r.PgsagaKey, r.Leased, r.DbNow)
	if err != nil {
		return nil, "", err
	}
	return k, r.PgsagaKey.TraceContext.String, nil
}

// settleKey completes a parked key with the response an operator's settlement produced, and
// records the decision, in the settlement's transaction (which holds the key's row lock).
func settleKey(ctx context.Context, tx pgx.Tx, k *Key, values map[string]json.RawMessage, resp *Response, retention time.Duration, p *SettleParams) error {
	state, err := encodeState(values)
	if err != nil {
		return err
	}
	status, header, body, err := encodeResponse(resp)
	if err != nil {
		return err
	}
	_, err = keystore.New(tx).SettleKey(ctx, &keystore.SettleKeyParams{
		State: state, ResponseStatus: status, ResponseHeaders: header, ResponseBody: body,
		RetentionMs: retention.Milliseconds(), TenantID: k.Scope.Tenant, ActorID: k.Scope.Actor, Key: k.Key,
		SettledBy: p.By, Outcome: string(p.Outcome), Note: p.Note, Reference: textOrNull(p.Reference)})
	if err != nil {
		return fmt.Errorf("error settling key: %w", err)
	}
	return nil
}
