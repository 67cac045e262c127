package saga

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
)

// allocBudgets are the most heap allocations one request of each measured path may make in this
// process (the engine, pgx and the runtime together), as the side-by-side harness's operations
// run them. Allocation counts are deterministic where timings are not: a change that allocates
// more on a request path fails here, and a budget moves only with a reason given in its commit.
//
// A replay of an operation that begins with an atomic phase starts that phase, which is stopped
// at its first statement by the key it reads then (phase.go): the phase's context, transaction
// and run state are what the replay's budget holds beyond the read.
var allocBudgets = map[string]float64{
	"replay": 50,
	"single": 124,
	"phased": 80,
}

// TestAllocationBudgets runs each path alone (not in parallel: allocations are counted for the
// whole process) after warming the connections' statement caches, and checks the allocations of
// one request against its budget. Under the race detector sync.Pool (which pgx uses) drops items
// at random, so the counts are not deterministic there and the test does not run: it runs in
// `go test` without -race (make test runs it so, see the Makefile). The client traces nothing
// (no TracerProvider), as by default: the budgets are what tracing costs when it is off, nothing.
func TestAllocationBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not deterministic under the race detector")
	}
	db := dbtest.NewDB(t)
	_, err := db.Pool.Exec(t.Context(), `CREATE TABLE sbs_orders(id bigserial PRIMARY KEY, ref text NOT NULL, amount bigint NOT NULL)`)
	require.NoError(t, err)
	noop := func(context.Context, pgx.Tx, *phases.Run) error { return nil }
	c, err := NewClient(&Config{DB: db.Pool, Operations: []*phases.Operation{
		{Name: "single", Steps: []phases.Step{
			phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO sbs_orders(ref, amount) VALUES ($1, 100) RETURNING id`, run.Key()).Scan(&id); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]any{"id": id})
			}),
		}},
		{Name: "phased", Steps: []phases.Step{
			phases.Atomic("created", noop),
			phases.Call("charged", func(context.Context, *phases.Run) error { return nil }),
			phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
				return run.Respond(http.StatusCreated, map[string]any{"ok": true})
			}),
		}},
	}})
	require.NoError(t, err)
	require.Nil(t, c.tr, "tracing is off")
	scope := Scope{Tenant: "t-sbs", Actor: "a-sbs"}
	const runs = 300
	for _, path := range []struct{ name, op string }{{"replay", "single"}, {"single", "single"}, {"phased", "phased"}} {
		reqs := make([]*Request, runs+1+50)
		for i := range reqs {
			key := fmt.Sprintf("%s-%08d", path.name, i)
			if path.name == "replay" {
				key = "replay-00000000"
			}
			reqs[i] = &Request{Scope: scope, Key: key, Method: "POST", Path: "/" + path.op, Body: []byte(`{"amount":100}`)}
		}
		next := 0
		run := func() {
			res, err := c.Run(t.Context(), path.op, reqs[next])
			next++
			if err != nil || res.Replayed != (path.name == "replay") {
				t.Fatalf("%s: %v %+v", path.name, err, res)
			}
		}
		if path.name == "replay" {
			_, err := c.Run(t.Context(), path.op, reqs[0])
			require.NoError(t, err)
		}
		for range 50 { // the statement caches of the pool's connections, the client's learning
			run()
		}
		runtime.GC()
		got := testing.AllocsPerRun(runs, run)
		t.Logf("%s: %.0f allocations per request (budget %.0f)", path.name, got, allocBudgets[path.name])
		require.LessOrEqual(t, got, allocBudgets[path.name], "%s allocates more per request than its budget", path.name)
	}
}
