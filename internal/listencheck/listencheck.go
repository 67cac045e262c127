// Package listencheck tells whether a session hears the notifications committed on its
// database: what LISTEN needs, and what a pooler in transaction pooling mode silently takes away
// (the LISTEN stays with the server session of the transaction that ran it, which the pooler
// gives to another client next). saga's CheckListen and the worker's Start use it to refuse such
// a configuration at start instead of waiting in vain later.
package listencheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Timeout is the longest Heard waits for its notification: on a database that answers, one
// arrives within milliseconds.
const Timeout = 5 * time.Second

// channel carries the check's own notification, a random token.
const channel = "pgsaga_listen_check"

// Listener is where the check listens: *pgxpool.Pool.
type Listener interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// Notifier is where the check notifies from: *pgxpool.Pool.
type Notifier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Heard listens on a connection of listen, sends a notification through notify, and reports
// whether the listening session heard it within Timeout (or before ctx's deadline, if sooner).
// Not hearing it is not an error: err is for a database that could not be asked, or a ctx
// cancelled before the answer.
func Heard(ctx context.Context, listen Listener, notify Notifier) (heard bool, err error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := listen.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("error checking LISTEN: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return false, fmt.Errorf("error checking LISTEN: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+channel) }()
	token := make([]byte, 16)
	_, _ = rand.Read(token) // crypto/rand.Read never fails
	payload := hex.EncodeToString(token)
	if _, err := notify.Exec(ctx, "SELECT pg_notify('"+channel+"', $1)", payload); err != nil {
		return false, fmt.Errorf("error checking LISTEN: %w", err)
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		switch {
		case err != nil && errors.Is(parent.Err(), context.Canceled):
			return false, fmt.Errorf("error checking LISTEN: %w", parent.Err())
		case err != nil && ctx.Err() != nil:
			return false, nil
		case err != nil:
			return false, fmt.Errorf("error checking LISTEN: %w", err)
		case n.Channel == channel && n.Payload == payload:
			return true, nil
		}
	}
}
