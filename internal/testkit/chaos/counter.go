package chaos

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Counter is a pgx tracer that records every round trip sent through the connections it is set
// on, with the statements each carried: a query or Exec (BEGIN, COMMIT and ROLLBACK included) is
// a round trip of one statement, a batch (pipeline) one round trip of all its statements.
// Prepares, pings and pool health checks do not go through these tracers and are not recorded.
// It is safe for concurrent use.
type Counter struct {
	mu    sync.Mutex
	trips []Trip
}

// Trip is one round trip: the statements sent together, each squeezed to one line.
type Trip []string

// String renders the trip as its statements joined by " + ".
func (t Trip) String() string { return strings.Join(t, " + ") }

var (
	_ pgx.QueryTracer = (*Counter)(nil)
	_ pgx.BatchTracer = (*Counter)(nil)
)

// TraceQueryStart records a statement sent on its own.
func (c *Counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.record(Trip{oneLine(data.SQL)})
	return ctx
}

// TraceQueryEnd does nothing.
func (c *Counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart records a batch's statements as one round trip.
func (c *Counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	trip := make(Trip, 0, data.Batch.Len())
	for _, q := range data.Batch.QueuedQueries {
		trip = append(trip, oneLine(q.SQL))
	}
	c.record(trip)
	return ctx
}

// TraceBatchQuery does nothing.
func (c *Counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing.
func (c *Counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *Counter) record(t Trip) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trips = append(c.trips, t)
}

// Take returns the round trips recorded since the last Take and forgets them.
func (c *Counter) Take() []Trip {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.trips
	c.trips = nil
	return out
}

// Statements counts the statements of trips.
func Statements(trips []Trip) int {
	n := 0
	for _, t := range trips {
		n += len(t)
	}
	return n
}

// oneLine squeezes white space so that a statement reads on one line in a failure message, and
// cuts it short.
func oneLine(sql string) string {
	// A key store statement opens with its name for sqlc ("-- name: ReadHead :one"): the
	// statement is what follows.
	if strings.HasPrefix(sql, "-- name: ") {
		if _, rest, ok := strings.Cut(sql, "\n"); ok {
			sql = rest
		}
	}
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}

// CountingPool opens a pool on url with c as its tracer, at most maxConns connections.
func CountingPool(ctx context.Context, url string, maxConns int32, c *Counter) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("error parsing database URL: %w", err)
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error opening a counting pool: %w", err)
	}
	return pool, nil
}
