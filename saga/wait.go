package saga

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// notifyChannel carries ["tenant","actor","key"] when a started key that a duplicate waits for
// completes or is parked.
const notifyChannel = "pgsaga_key_done"

// awaitKeySQL tells the execution holding a started key that a duplicate waits for it: the
// statement that completes or parks the key notifies notifyChannel only when waiters is set.
// Setting it takes the key's row lock, so it is serialised with that statement: either the key
// is still started when the flag is set (and the completion, which follows, notifies), or no row
// is returned and the key has finished. No index covers waiters: a HOT update.
const awaitKeySQL = `UPDATE pgsaga_key SET waiters = true
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND status = 'started'
	  AND locked_until > clock_timestamp()
	RETURNING locked_until, clock_timestamp()`

// Polling, for a client that has nowhere to LISTEN (Config.TransactionPooling without
// Config.ListenDB): the first read comes soon, for the short requests most duplicates wait
// for, and the reads thin out to one every pollMax.
const (
	pollFirst = 10 * time.Millisecond
	pollMax   = 100 * time.Millisecond
)

// acquirer is what listening needs: a connection of its own (*pgxpool.Pool).
type acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// listenDB is where the bounded wait listens: Config.ListenDB, else Config.DB unless it is
// transaction-pooled; nil when the wait polls.
func (c *Client) listenDB() acquirer {
	switch {
	case c.cfg.ListenDB != nil:
		return c.cfg.ListenDB
	case c.cfg.TransactionPooling:
		return nil
	}
	return c.cfg.DB
}

// waitForKey waits, up to d and never past the key's lease, for an in-flight key to leave the
// started state, then reads it again. It listens on its own connection, then sets the key's
// waiters flag, so that the completion (which notifies only when the flag is set) cannot slip
// between the caller's read and the wait. With nowhere to listen it polls.
func (c *Client) waitForKey(ctx context.Context, scope Scope, key string, d time.Duration) (*keyHead, error) {
	listen := c.listenDB()
	if listen == nil {
		return c.pollForKey(ctx, scope, key, d)
	}
	conn, err := listen.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return nil, err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+notifyChannel) }()

	var lockedUntil, now pgtype.Timestamptz
	err = conn.QueryRow(ctx, awaitKeySQL, scope.Tenant, scope.Actor, key).Scan(&lockedUntil, &now)
	switch {
	case err == nil:
		d = min(d, lockedUntil.Time.Sub(now.Time))
		if err := c.awaitNotification(ctx, conn.Conn().WaitForNotification, scope, key, d); err != nil {
			return nil, err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, err
	}
	// No longer started and leased (finished, parked, or its lease ran out), or notified, or
	// waited long enough: answer from the key as it is. Read on the pool: a wait that timed
	// out may have left this connection unusable.
	var h keyHead
	if err := c.readWaited(ctx, scope, key, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// readWaited reads the head of the key waited for into h, on the pool; a key that is gone (a
// retention GC, an operator) is ErrKeyNotFound.
func (c *Client) readWaited(ctx context.Context, scope Scope, key string, h *keyHead) error {
	found, err := readHead(ctx, c.cfg.DB, scope, key, h)
	if err == nil && !found {
		return ErrKeyNotFound
	}
	return err
}

// awaitNotification waits up to d for notifyChannel to name the key.
func (c *Client) awaitNotification(ctx context.Context, wait func(context.Context) (*pgconn.Notification, error), scope Scope, key string, d time.Duration) error {
	waitCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		n, err := wait(waitCtx)
		if err != nil {
			if waitCtx.Err() != nil && ctx.Err() == nil {
				return nil // waited long enough
			}
			return err
		}
		var got []string
		if json.Unmarshal([]byte(n.Payload), &got) == nil && len(got) == 3 &&
			got[0] == scope.Tenant && got[1] == scope.Actor && got[2] == key {
			return nil
		}
	}
}

// pollForKey is waitForKey without LISTEN: it reads the key at growing intervals (pollFirst to
// pollMax) until the key leaves the started state or its lease runs out, for up to d. It sets
// no waiters flag: nobody listens for the notification.
func (c *Client) pollForKey(ctx context.Context, scope Scope, key string, d time.Duration) (*keyHead, error) {
	deadline := time.Now().Add(d)
	interval := pollFirst
	var h keyHead
	for {
		if err := c.readWaited(ctx, scope, key, &h); err != nil {
			return nil, err
		}
		if h.Status != KeyStatusStarted || h.LeaseLeft <= 0 {
			return &h, nil
		}
		// Never past the lease: once it ends, the next read answers (a takeover, or 409).
		wait := min(interval, time.Until(deadline), h.LeaseLeft)
		if wait <= 0 {
			return &h, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		interval = min(2*interval, pollMax)
	}
}
