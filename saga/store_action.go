package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Statements on pgsaga_key_action (operators' history) that are not part of a takeover.

// lockKeyToSettleSQL reads a key to settle, with the trace context of the request that claimed
// it, and locks it for the settlement's transaction.
const lockKeyToSettleSQL = `SELECT ` + keyColumns + `, trace_context FROM pgsaga_key
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 FOR UPDATE`

// lockKeyToSettle reads and locks a key to settle; ErrKeyNotFound when there is none.
func lockKeyToSettle(ctx context.Context, tx pgx.Tx, scope Scope, key string) (*Key, string, error) {
	var trace pgtype.Text
	k, err := scanKey(tx.QueryRow(ctx, lockKeyToSettleSQL, scope.Tenant, scope.Actor, key), &trace)
	if err != nil {
		return nil, "", err
	}
	return k, trace.String, nil
}

// settleKeySQL completes a parked key with the response an operator's settlement produced, and
// records the decision, in the settlement's transaction (which holds the key's row lock).
const settleKeySQL = `WITH k AS (
	UPDATE pgsaga_key SET
		status = 'completed', recovery_point = 'finished', state = $4,
		locked_until = NULL, parked_reason = NULL,
		response_status = $5, response_headers = $6, response_body = $7,
		completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $8::bigint * interval '1 millisecond',
		updated_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND status = 'failed'
	RETURNING 1)
INSERT INTO pgsaga_key_action (tenant_id, actor_id, key, by, action, outcome, note, reference)
SELECT $1, $2, $3, $9, 'settle', $10, $11, $12 FROM k
RETURNING 1`

func settleKey(ctx context.Context, tx pgx.Tx, k *Key, values map[string]json.RawMessage, resp *Response, retention time.Duration, p *SettleParams) error {
	state, err := encodeState(values)
	if err != nil {
		return err
	}
	status, header, body, err := encodeResponse(resp)
	if err != nil {
		return err
	}
	var one int
	err = tx.QueryRow(ctx, settleKeySQL, k.Scope.Tenant, k.Scope.Actor, k.Key, state, status, header, body,
		retention.Milliseconds(), p.By, string(p.Outcome), p.Note, nullIfEmpty(p.Reference)).Scan(&one)
	if err != nil {
		return fmt.Errorf("error settling key: %w", err)
	}
	return nil
}
