package saga_test

import (
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// testTables are the business tables of the test operations. None has a unique constraint on
// what it records: an effect committed twice shows up as two rows.
const testTables = `
CREATE TABLE test_effect (
    key    text        NOT NULL,
    step   text        NOT NULL,
    detail text        NOT NULL DEFAULT '',
    at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE test_reservation (
    id     text PRIMARY KEY,
    key    text NOT NULL,
    status text NOT NULL CHECK (status IN ('held', 'released'))
);
-- A business table with a natural key: a phase inserting into it cannot run twice for one key.
CREATE TABLE test_claim (key text PRIMARY KEY);
`

// harness is one test's engine: its own database, a client running the test's operations, chaos
// points those operations pass through, and an outside system their calls reach.
type harness struct {
	t      *testing.T
	db     *dbtest.DB
	client *saga.Client
	points *chaos.Points
	ext    *outside
	scope  saga.Scope
}

// newHarness builds a client on a fresh database. ops returns the operations (unwrapped); each is
// wrapped with the harness's chaos points. cfg may set anything but DB and Operations.
func newHarness(t *testing.T, cfg *saga.Config, ops func(h *harness) []*phases.Operation) *harness {
	t.Helper()
	h := &harness{t: t, db: dbtest.NewDB(t), points: chaos.NewPoints(), ext: newOutside(), scope: saga.Scope{Tenant: "tenant-1", Actor: "alice"}}
	_, err := h.db.Pool.Exec(t.Context(), testTables)
	require.NoError(t, err)
	// Before the database is dropped (its pool waits for connections in use): let blocked
	// executions go.
	t.Cleanup(h.points.ReleaseAll)
	h.client = h.newClient(cfg, ops)
	return h
}

// newClient is another client (another process) on the harness's database and points.
func (h *harness) newClient(cfg *saga.Config, ops func(h *harness) []*phases.Operation) *saga.Client {
	h.t.Helper()
	c := saga.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.DB = h.db.Pool
	c.Operations = chaos.WrapOperations(ops(h), h.points)
	client, err := saga.NewClient(&c)
	require.NoError(h.t, err)
	return client
}

func (h *harness) req(key, body string) *saga.Request {
	return &saga.Request{Scope: h.scope, Key: key, Method: "POST", Path: "/test", Body: []byte(body)}
}

// expireLease ends a key's lease now, on the database clock, as waiting it out would.
func (h *harness) expireLease(key string) {
	h.t.Helper()
	tag, err := h.db.Pool.Exec(h.t.Context(), `UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1 AND status = 'started'`, key)
	require.NoError(h.t, err)
	require.EqualValues(h.t, 1, tag.RowsAffected(), "no started key %s to expire", key)
}

// makeDue moves a started key's next attempt to now, as waiting for it would.
func (h *harness) makeDue(key string) {
	h.t.Helper()
	tag, err := h.db.Pool.Exec(h.t.Context(), `UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = $1 AND status = 'started'`, key)
	require.NoError(h.t, err)
	require.EqualValues(h.t, 1, tag.RowsAffected(), "no started key %s to make due", key)
}

// key reads a key row; nil when there is none.
func (h *harness) key(key string) *saga.Key {
	h.t.Helper()
	k, err := h.client.KeyGet(h.t.Context(), h.scope, key)
	if err == saga.ErrKeyNotFound {
		return nil
	}
	require.NoError(h.t, err)
	return k
}

// effects counts the committed effects of key's step.
func (h *harness) effects(key, step string) int {
	h.t.Helper()
	return h.count(`SELECT count(*) FROM test_effect WHERE key = $1 AND step = $2`, key, step)
}

func (h *harness) count(sql string, args ...any) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.db.Pool.QueryRow(h.t.Context(), sql, args...).Scan(&n))
	return n
}

// outside is a system beyond the database that calls reach. Like a provider with idempotency
// keys it acts once per key and answers a repeat with the first receipt; it remembers every
// request, and whether the engine marked it as resumed.
type outside struct {
	mu          sync.Mutex
	invocations map[string][]bool // per key: Run.Resumed of each request
	receipts    map[string]string
}

func newOutside() *outside {
	return &outside{invocations: map[string][]bool{}, receipts: map[string]string{}}
}

func (o *outside) apply(key string, resumed bool) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.invocations[key] = append(o.invocations[key], resumed)
	if r, ok := o.receipts[key]; ok {
		return r
	}
	r := fmt.Sprintf("rcpt-%d", len(o.receipts)+1)
	o.receipts[key] = r
	return r
}

// calls is how many requests key received; acted is how many effects they had (0 or 1).
func (o *outside) calls(key string) (requests int, resumed []bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.invocations[key]), append([]bool(nil), o.invocations[key]...)
}

func (o *outside) acted(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.receipts[key]
	return ok
}

// mayHaveReached is what a call knows from the journal: whether an earlier attempt of it may have
// reached the outside world.
func mayHaveReached(run *phases.Run) bool {
	for _, c := range run.PriorCalls() {
		if c.MayHaveReached() {
			return true
		}
	}
	return false
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
