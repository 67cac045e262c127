package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/internal/listencheck"
)

// ErrListenUnheard is returned when a notification committed on the database does not reach a
// session listening for it: the listening connection goes through a pooler in transaction
// pooling mode, or to another database.
var ErrListenUnheard = errors.New("a notification did not reach the session listening for it")

// CheckListen checks what only the database can tell: that a notification committed through
// Config.DB reaches the session the bounded wait for a request in flight
// (phases.Operation.WaitInFlight) listens on — Config.ListenDB, else Config.DB. Through a pooler
// in transaction pooling mode a LISTEN never hears anything, and without this check nothing
// says so: every waiting duplicate would wait its whole WaitInFlight. Call it at start: it
// listens, notifies itself and waits up to 5s (or until ctx's deadline) for the notification,
// and returns ErrListenUnheard, with what to change, when it does not come. It checks nothing
// when the client polls (Config.TransactionPooling without Config.ListenDB).
func (c *Client) CheckListen(ctx context.Context) error {
	listen := c.listenDB()
	if listen == nil {
		return nil
	}
	start := time.Now()
	heard, err := listencheck.Heard(ctx, listen, c.cfg.DB)
	switch {
	case err != nil:
		return fmt.Errorf("saga: %w", err)
	case heard:
		return nil
	}
	where := "Config.DB"
	if c.cfg.ListenDB != nil {
		where = "Config.ListenDB"
	}
	return fmt.Errorf("saga: %w within %s: %s reaches no session of its own (a pooler in transaction pooling mode?) "+
		"or another database than Config.DB; LISTEN needs a direct connection to the same database, or session pooling "+
		"(with a transaction-pooled Config.DB, set Config.TransactionPooling, and Config.ListenDB or none to poll)",
		ErrListenUnheard, time.Since(start).Round(100*time.Millisecond), where)
}
