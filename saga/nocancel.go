package saga

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// errCancelRequestRefused is what a connection's attempt to send a cancel request meets.
var errCancelRequestRefused = errors.New("pgsaga: cancel requests are refused on this pool (saga.WithoutCancelRequests)")

// WithoutCancelRequests makes the connections of a pool built from cfg never send PostgreSQL a
// cancel request. Use it for the pool of a Client on a primary with a synchronous standby.
//
// pgx sends a cancel request for the statement in progress when it gives up on a connection (a
// context that ended, a read that timed out). On a primary whose COMMIT waits for its
// synchronous standby, a cancel ends that wait with the transaction committed there, and
// visible there, though the standby never got it. If that primary is about to lose its place (it
// was frozen or cut off, and the standby took over), what other sessions read from it before it
// is demoted, such as a key's stored response replayed to a client, is then an answer the new
// primary does not have. Without the cancel, the COMMIT stays waiting, invisible to everyone,
// until the standby confirms it or the old primary is demoted and rewound, which discards it: an
// execution that gave up on its COMMIT leaves an outcome nobody has seen, as the key's protocol
// expects.
//
// What it costs: a statement a client gave up on runs on in the server to its end instead of
// being interrupted. pgsaga's statements are short; a long query of an application sharing the
// pool is not cut short by its context either, only abandoned.
func WithoutCancelRequests(cfg *pgxpool.Config) {
	before := cfg.BeforeConnect
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		if before != nil {
			if err := before(ctx, cc); err != nil {
				return err
			}
		}
		refuseDialsOnceConnected(&cc.Config)
		return nil
	}
}

// refuseDialsOnceConnected makes c's connection refuse every dial after it is established: pgx
// dials only to connect (one host after another) and, once connected, only to send a cancel
// request. c is the connection's own copy of the configuration (pgxpool's BeforeConnect gives
// each connection one), so the flag is that connection's.
func refuseDialsOnceConnected(c *pgconn.Config) {
	dial, after := c.DialFunc, c.AfterConnect
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	var connected atomic.Bool
	c.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if connected.Load() {
			return nil, errCancelRequestRefused
		}
		return dial(ctx, network, addr)
	}
	c.AfterConnect = func(ctx context.Context, pc *pgconn.PgConn) error {
		connected.Store(true)
		if after != nil {
			return after(ctx, pc)
		}
		return nil
	}
}
