// Package resumetest is what the resumer's and the worker's tests share: an operation whose keys
// are left "crashed" after their first phase, with every external call counted, and a way to
// seed many such keys at once.
package resumetest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// OpEffect is the operation's name: created (atomic) → effect (an external call, counted per
// key) → recorded (atomic: one row per key in effect_rows, then the response). A key resumed
// twice shows up as two calls, a key committed twice as two rows.
const OpEffect = "effect"

// Scope is the scope of every seeded key.
var Scope = saga.Scope{Tenant: "t1", Actor: "a1"}

// Effects counts OpEffect's external calls per key and can hold them to stop a resume midway.
type Effects struct {
	mu    sync.Mutex
	calls map[string]int
	// Hold, when non-nil, blocks every call until it is closed.
	Hold chan struct{}
	// Entered, when non-nil, receives each key whose call started.
	Entered chan string
	// Fail, when set, is every call's error.
	Fail error
	// OnCall, when set, runs at the start of every call with the key.
	OnCall func(ctx context.Context, key string)
}

// Change changes Hold, Entered or Fail while calls may be running.
func (e *Effects) Change(fn func(e *Effects)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(e)
}

// NewEffects returns a counter with no call made.
func NewEffects() *Effects { return &Effects{calls: map[string]int{}} }

func (e *Effects) call(ctx context.Context, run *phases.Run) error {
	e.mu.Lock()
	e.calls[run.Key()]++
	hold, entered, fail, onCall := e.Hold, e.Entered, e.Fail, e.OnCall
	e.mu.Unlock()
	if onCall != nil {
		onCall(ctx, run.Key())
	}
	if entered != nil {
		entered <- run.Key()
	}
	if hold != nil {
		<-hold
	}
	return fail
}

// Count is how many calls key made.
func (e *Effects) Count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[key]
}

// Total is how many calls all keys made.
func (e *Effects) Total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.calls {
		n += c
	}
	return n
}

// Operation returns OpEffect counting into e; onCall, when set, also runs on every call (to
// count which client made it).
func (e *Effects) Operation(onCall func()) *phases.Operation {
	return &phases.Operation{
		Name: OpEffect,
		Steps: []phases.Step{
			phases.Atomic("created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error { return nil }),
			phases.Call("effect", func(ctx context.Context, run *phases.Run) error {
				if onCall != nil {
					onCall()
				}
				return e.call(ctx, run)
			}),
			phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if _, err := tx.Exec(ctx, `INSERT INTO effect_rows (tenant_id, key) VALUES ($1, $2)`, run.Tenant(), run.Key()); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
			}),
		},
	}
}

// CreateEffectTable makes the table OpEffect's last phase writes; no unique index, so a second
// commit for a key would show as a second row rather than as an error.
func CreateEffectTable(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `CREATE TABLE effect_rows (tenant_id text NOT NULL, key text NOT NULL)`)
	require.NoError(t, err)
}

// SeedCrashed inserts n OpEffect keys as a process that died right after the first phase leaves
// them: started at recovery point "created", with a lease that expired a second ago, and the
// journal entry of the "effect" call that the first phase's claim committed in the key row
// (never sent). The keys are "<prefix>-00000" onwards, in Scope.
func SeedCrashed(t testing.TB, pool *pgxpool.Pool, prefix string, n int) []string {
	t.Helper()
	_, err := pool.Exec(t.Context(), `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
			request_hash, request_body, status, recovery_point, lease_token, locked_until, next_attempt_at,
			call_step, call_started_at, call_deadline)
		SELECT $4, $5, $1 || '-' || lpad(i::text, 5, '0'), $3, 'POST', '/effects',
			sha256('{}'::bytea), '{}'::bytea, 'started', 'created', gen_random_uuid(),
			now() - interval '1 second', now() - interval '1 second',
			'effect', now() - interval '31 seconds', now() - interval '1 second'
		FROM generate_series(0, $2 - 1) AS i`,
		prefix, n, OpEffect, Scope.Tenant, Scope.Actor)
	require.NoError(t, err)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return keys
}

// NewClient is a saga client on pool with cfg.
func NewClient(t testing.TB, pool *pgxpool.Pool, cfg *saga.Config) *saga.Client {
	t.Helper()
	cfg.DB = pool
	c, err := saga.NewClient(cfg)
	require.NoError(t, err)
	return c
}

// CountRows runs a count query.
func CountRows(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
