package perflab

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/bench/internal/sbsops"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

// ordersDDL is the table of the side-by-side benchmark's single-transaction operation
// (sbsops.Single, docs/performance.md).
const ordersDDL = `CREATE TABLE sbs_orders(id bigserial PRIMARY KEY, ref text NOT NULL, amount bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now())`

// engine is a saga client on a fresh, migrated database.
type engine struct {
	pool   *pgxpool.Pool
	client *saga.Client
	trips  *tripCounter
	scope  saga.Scope
}

func newEngine(tb testing.TB) *engine {
	tb.Helper()
	trips := &tripCounter{}
	p := newDatabase(tb, 20, trips)
	ctx := context.Background()
	if _, err := migrations.Migrate(ctx, p, &migrations.MigrateOpts{SkipRiver: true}); err != nil {
		tb.Fatal(err)
	}
	if _, err := p.Exec(ctx, ordersDDL); err != nil {
		tb.Fatal(err)
	}
	c, err := saga.NewClient(&saga.Config{DB: p, Operations: sbsops.Operations()})
	if err != nil {
		tb.Fatal(err)
	}
	return &engine{pool: p, client: c, trips: trips, scope: saga.Scope{Tenant: "t-sbs", Actor: "a-sbs"}}
}

// body is the harness's request body.
var body = []byte(`{"amount":100}`)

func (e *engine) run(op, key string) (*saga.Result, error) {
	return e.client.Run(context.Background(), op, &saga.Request{Scope: e.scope, Key: key, Method: "POST", Path: "/" + op, Body: body})
}

// benchEngine runs op b.N times with a new key per request (or, with replay, over keys completed
// beforehand), from conc goroutines, and reports round trips and client and server CPU per
// request beside Go's figures.
func benchEngine(b *testing.B, op string, replay bool, conc int) {
	e := newEngine(b)
	key := func(i int) string { return fmt.Sprintf("k-%s-%09d", b.Name()[16:], i) }
	const replayKeys = 512
	if replay {
		for i := range replayKeys {
			if _, err := e.run(op, key(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 50 { // warm the connections' statement caches
		if _, err := e.run(op, key(1_000_000+i)); err != nil {
			b.Fatal(err)
		}
	}
	e.trips.n.Store(0)
	b.ReportAllocs()
	c0 := readCPU()
	start := time.Now()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				k := key(2_000_000 + i)
				if replay {
					k = key(i % replayKeys)
				}
				res, err := e.run(op, k)
				if err != nil {
					b.Error(err)
					return
				}
				if res.Replayed != replay {
					b.Errorf("replayed %v, want %v", res.Replayed, replay)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	el := time.Since(start)
	used := readCPU().sub(c0)
	n := float64(b.N)
	b.ReportMetric(float64(e.trips.n.Load())/n, "trips/op")
	b.ReportMetric(float64(used.client.Microseconds())/n, "client-µs/op")
	b.ReportMetric(float64(used.server.Microseconds())/n, "server-µs/op")
	b.ReportMetric(n/el.Seconds(), "req/s")
}

// BenchmarkEngine is the engine's three measured paths, one request at a time (c=1, where
// ns/op is the latency) and from 8 goroutines as the side-by-side harness runs them (c=8, where
// req/s and CPU per request are what to compare).
func BenchmarkEngine(b *testing.B) {
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("single/c=%d", conc), func(b *testing.B) { benchEngine(b, "sbs_single", false, conc) })
		b.Run(fmt.Sprintf("replay/c=%d", conc), func(b *testing.B) { benchEngine(b, "sbs_single", true, conc) })
		b.Run(fmt.Sprintf("phased/c=%d", conc), func(b *testing.B) { benchEngine(b, "sbs_phased", false, conc) })
	}
}
