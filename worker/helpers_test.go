package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// opEffect is a test operation whose keys the tests leave "crashed" after its first phase:
// created (atomic) → effect (an external call, counted per key in Go) → recorded (atomic: one
// row per key in effect_rows, then the response). A key resumed twice shows as two calls.
const opEffect = "effect"

type effects struct {
	mu      sync.Mutex
	calls   map[string]int
	hold    chan struct{} // when non-nil, calls block until it is closed
	entered chan string   // receives each key whose call started, when non-nil
}

func newEffects() *effects { return &effects{calls: map[string]int{}} }

func (e *effects) call(ctx context.Context, run *phases.Run) error {
	e.mu.Lock()
	e.calls[run.Key()]++
	hold, entered := e.hold, e.entered
	e.mu.Unlock()
	if entered != nil {
		entered <- run.Key()
	}
	if hold != nil {
		<-hold
	}
	return nil
}

func (e *effects) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[key]
}

func (e *effects) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.calls {
		n += c
	}
	return n
}

// operation returns opEffect; each call also counts in mine (which worker made it).
func (e *effects) operation(mine *int64, mu *sync.Mutex) *phases.Operation {
	return &phases.Operation{
		Name: opEffect,
		Steps: []phases.Step{
			phases.Atomic("created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error { return nil }),
			phases.Call("effect", func(ctx context.Context, run *phases.Run) error {
				if mine != nil {
					mu.Lock()
					*mine++
					mu.Unlock()
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

// createEffectTable makes the table opEffect's last phase writes; no unique index, so a second
// commit for a key would show as a second row rather than as an error.
func createEffectTable(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `CREATE TABLE effect_rows (tenant_id text NOT NULL, key text NOT NULL)`)
	require.NoError(t, err)
}

// seedCrashed inserts n opEffect keys as a process that died right after the first phase
// leaves them: started at recovery point "created", with a lease that expired a second ago.
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

func newClient(t testing.TB, pool *pgxpool.Pool, cfg *saga.Config) *saga.Client {
	t.Helper()
	cfg.DB = pool
	c, err := saga.NewClient(cfg)
	require.NoError(t, err)
	return c
}

// startWorker builds and starts a worker with a fast sweep, and stops it when the test ends.
func startWorker(t testing.TB, cfg *worker.Config) *worker.Worker {
	t.Helper()
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = 50 * time.Millisecond
	}
	w, err := worker.New(cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.WithoutCancel(t.Context())))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

func countRows(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
