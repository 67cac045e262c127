package saga

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/keystore"
)

// The bounded wait of a duplicate for the execution in flight (phases.Operation.WaitInFlight).
// A waiting duplicate holds no pooled connection while it waits: it listens through the client's
// one listening session (listener.go), shared by every duplicate of the process, or, with
// nowhere to listen, polls the key without holding a connection between reads. Each of its
// statements takes a connection for that statement alone, so the execution it waits for always
// gets one. The wait ends at the first of: the key leaves started, WaitInFlight, the lease's
// end, the caller's context.

// notifyChannel carries ["tenant","actor","key"] when a started key that a duplicate waits for
// completes or is parked.
const notifyChannel = "pgsaga_key_done"

// Polling, for a client that has nowhere to LISTEN (Config.TransactionPooling without
// Config.ListenDB), or whose listening session cannot be opened now: the first read comes soon,
// for the short requests most duplicates wait for, and the reads thin out to one every pollMax.
const (
	pollFirst = 10 * time.Millisecond
	pollMax   = 100 * time.Millisecond
)

// listenDB is where the bounded wait listens: Config.ListenDB, else Config.DB when it is a pool
// and not transaction-pooled; nil when the wait polls.
func (c *Client) listenDB() *pgxpool.Pool {
	switch {
	case c.cfg.ListenDB != nil:
		return c.cfg.ListenDB
	case c.cfg.TransactionPooling:
		return nil
	}
	pool, _ := c.cfg.DB.(*pgxpool.Pool)
	return pool
}

// waitForKey waits, up to d and never past the key's lease, for an in-flight key to leave the
// started state, then reads it again. It joins the client's listening session before it sets
// the key's waiters flag, so that the completion (which notifies only when the flag is set)
// cannot slip between the caller's read and the wait. ctx is the caller's: its end ends the wait.
func (c *Client) waitForKey(ctx context.Context, scope Scope, key string, d time.Duration) (*keyHead, error) {
	deadline := time.Now().Add(d)
	if c.listener == nil {
		return c.pollForKey(ctx, scope, key, deadline)
	}
	w := c.listener.join(scope, key)
	defer c.listener.leave(w)
	switch err := w.listening(ctx, time.Until(deadline)); {
	case errors.Is(err, errListenerDown):
		c.cfg.Logger.WarnContext(ctx, "cannot listen for the request in flight; polling its key", "key", key, "error", err)
		return c.pollForKey(ctx, scope, key, deadline)
	case err != nil:
		return nil, err
	}

	// The statement that completes or parks the key notifies notifyChannel only when its
	// waiters flag is set (keystore's AwaitKey).
	awaited, err := keystore.New(c.cfg.DB).AwaitKey(ctx, &keystore.AwaitKeyParams{TenantID: scope.Tenant, ActorID: scope.Actor, Key: key})
	switch {
	case err == nil:
		if err := w.wait(ctx, min(time.Until(deadline), awaited.LockedUntil.Time.Sub(awaited.DbNow.Time))); err != nil {
			return nil, err
		}
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, err
	}
	// No longer started and leased (finished, parked, or its lease ran out), or notified, or
	// waited long enough: answer from the key as it is.
	var h keyHead
	if err := c.readWaited(ctx, scope, key, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// readWaited reads the head of the key waited for into h; a key that is gone (a retention GC, an
// operator) is ErrKeyNotFound.
func (c *Client) readWaited(ctx context.Context, scope Scope, key string, h *keyHead) error {
	found, err := readHead(ctx, c.cfg.DB, scope, key, h)
	if err == nil && !found {
		return ErrKeyNotFound
	}
	return err
}

// pollForKey is waitForKey without LISTEN: it reads the key at growing intervals (pollFirst to
// pollMax) until the key leaves the started state or its lease runs out, or deadline passes. It
// sets no waiters flag: nobody listens for the notification.
func (c *Client) pollForKey(ctx context.Context, scope Scope, key string, deadline time.Time) (*keyHead, error) {
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
		if err := sleepCtx(ctx, wait); err != nil {
			return nil, err
		}
		interval = min(2*interval, pollMax)
	}
}

// sleepCtx waits d, or returns ctx's error when it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return nil
	}
}
