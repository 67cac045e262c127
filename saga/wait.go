package saga

import (
	"context"
	"encoding/json"
	"time"
)

// notifyChannel carries ["tenant","actor","key"] when a started key completes or is parked.
const notifyChannel = "pgsaga_key_done"

// waitForKey waits, up to d and never past the key's lease, for an in-flight key to leave the
// started state, then reads it again. It listens on its own connection, re-reading the key after
// LISTEN so that a completion between the caller's read and LISTEN is not missed.
func (c *Client) waitForKey(ctx context.Context, scope Scope, key string, d time.Duration) (*Key, error) {
	conn, err := c.cfg.DB.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return nil, err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+notifyChannel) }()

	k, err := lookupKey(ctx, conn, scope, key)
	if err != nil || k.Status != KeyStatusStarted || !k.Leased {
		return k, err
	}
	if k.LockedUntil != nil {
		d = min(d, k.LockedUntil.Sub(k.DBNow))
	}
	waitCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		n, err := conn.Conn().WaitForNotification(waitCtx)
		if err != nil {
			if waitCtx.Err() != nil && ctx.Err() == nil {
				break // waited long enough: answer from the key as it is
			}
			return nil, err
		}
		var got []string
		if json.Unmarshal([]byte(n.Payload), &got) == nil && len(got) == 3 &&
			got[0] == scope.Tenant && got[1] == scope.Actor && got[2] == key {
			break
		}
	}
	// Read on the pool: a wait that timed out may have left this connection unusable.
	return lookupKey(ctx, c.cfg.DB, scope, key)
}
