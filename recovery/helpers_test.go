package recovery_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/recovery"
	"github.com/pgsaga/pgsaga/saga"
)

// opEffect is a test operation whose keys the tests leave "crashed" after its first phase:
// created (atomic) → effect (an external call, counted per key in Go) → recorded (atomic: one
// row per key in effect_rows, then the response). A key resumed twice shows up as two calls.
const opEffect = "effect"

// effects counts the external calls of opEffect per key, and can hold them (block) to stop a
// resume in the middle.
type effects struct {
	mu      sync.Mutex
	calls   map[string]int
	hold    chan struct{} // when non-nil, calls block until it is closed
	entered chan string   // receives each key whose call started, when non-nil
	fail    error         // when set, every call fails with it
}

func newEffects() *effects { return &effects{calls: map[string]int{}} }

func (e *effects) call(ctx context.Context, run *phases.Run) error {
	e.mu.Lock()
	e.calls[run.Key()]++
	hold, entered, fail := e.hold, e.entered, e.fail
	e.mu.Unlock()
	if entered != nil {
		entered <- run.Key()
	}
	if hold != nil {
		<-hold
	}
	return fail
}

func (e *effects) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[key]
}

func (e *effects) operation() *phases.Operation {
	return &phases.Operation{
		Name: opEffect,
		Steps: []phases.Step{
			phases.Atomic("created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error { return nil }),
			phases.Call("effect", e.call),
			phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if _, err := tx.Exec(ctx, `INSERT INTO effect_rows (tenant_id, key) VALUES ($1, $2)`, run.Tenant(), run.Key()); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]string{"key": run.Key()})
			}),
		},
	}
}

// createEffectTable makes the table opEffect's last phase writes; no unique index, so a second
// commit for a key would show as a second row rather than as an error.
func createEffectTable(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `CREATE TABLE effect_rows (tenant_id text NOT NULL, key text NOT NULL)`)
	require.NoError(t, err)
}

func newClient(t testing.TB, pool *pgxpool.Pool, cfg *saga.Config) *saga.Client {
	t.Helper()
	cfg.DB = pool
	c, err := saga.NewClient(cfg)
	require.NoError(t, err)
	return c
}

// seedCrashed inserts n opEffect keys as a process that died right after the first phase
// leaves them: started at recovery point "created", with a lease that expired a second ago.
// The keys are "<prefix>-00000" onwards, in tenant t1, actor a1.
func seedCrashed(t testing.TB, pool *pgxpool.Pool, prefix string, n int) []string {
	t.Helper()
	_, err := pool.Exec(t.Context(), `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
			request_hash, request_body, status, recovery_point, lease_token, locked_until, next_attempt_at)
		SELECT 't1', 'a1', $1 || '-' || lpad(i::text, 5, '0'), $3, 'POST', '/effects',
			sha256('{}'::bytea), '{}'::bytea, 'started', 'created', gen_random_uuid(),
			now() - interval '1 second', now() - interval '1 second'
		FROM generate_series(0, $2 - 1) AS i`, prefix, n, opEffect)
	require.NoError(t, err)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return keys
}

var scope = saga.Scope{Tenant: "t1", Actor: "a1"}

func keyRow(t testing.TB, c *saga.Client, key string) *saga.Key {
	t.Helper()
	k, err := c.Key(t.Context(), scope, key)
	require.NoError(t, err)
	return k
}

func countRows(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), sql, args...).Scan(&n))
	return n
}

// drain runs RunOnce until a pass claims nothing, and adds up the results.
func drain(ctx context.Context, r *recovery.Resumer) (*recovery.RunResult, error) {
	total := &recovery.RunResult{}
	for {
		res, err := r.RunOnce(ctx)
		if err != nil {
			return total, err
		}
		total.Claimed += res.Claimed
		total.Completed += res.Completed
		total.Failed += res.Failed
		total.Parked += res.Parked
		total.Released += res.Released
		total.Superseded += res.Superseded
		if res.Claimed == 0 {
			return total, nil
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var errFlaky = errors.New("downstream unavailable")
