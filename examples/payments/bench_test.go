package payments_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/apikey"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

// The comparison benchmarks measure each variant against a baseline in the same run, on the same
// database: a fixed number of operations per variant, sequential for latency and over
// benchWorkers goroutines for throughput, interleaved in rounds so that drift (autovacuum, a
// noisy neighbour) hits every variant alike. They ignore b.N: one run is the measurement, and
// the ratios are reported as metrics. Timings never fail anything.
const (
	benchLatencyOps    = 600  // per variant, sequential
	benchThroughputOps = 2400 // per variant, over benchWorkers
	benchRounds        = 6
	benchWorkers       = 8
)

var benchScope = saga.Scope{Tenant: "tenant-bench", Actor: "bench"}

// benchVariant is one way of doing the work: op does the work numbered i (each i at most once).
type benchVariant struct {
	name string
	op   func(ctx context.Context, i int) error
}

// benchResult is a variant's totals.
type benchResult struct {
	latency    time.Duration // mean, sequential
	throughput float64       // operations per second, benchWorkers at once
}

// compare measures every variant, interleaved, and returns their results by name.
func compare(b *testing.B, variants []benchVariant) map[string]benchResult {
	b.Helper()
	ctx := context.Background()
	type totals struct {
		seq, par       time.Duration
		seqOps, parOps int
	}
	next := make([]atomic.Int64, len(variants))
	tot := make([]totals, len(variants))
	run := func(v int, n, workers int) time.Duration {
		var wg sync.WaitGroup
		var failed atomic.Value
		var remaining atomic.Int64
		remaining.Store(int64(n))
		start := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for remaining.Add(-1) >= 0 {
					if err := variants[v].op(ctx, int(next[v].Add(1)-1)); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		if err, _ := failed.Load().(error); err != nil {
			b.Fatalf("%s: %v", variants[v].name, err)
		}
		return elapsed
	}
	for range benchRounds {
		for v := range variants {
			tot[v].seq += run(v, benchLatencyOps/benchRounds, 1)
			tot[v].seqOps += benchLatencyOps / benchRounds
		}
		for v := range variants {
			tot[v].par += run(v, benchThroughputOps/benchRounds, benchWorkers)
			tot[v].parOps += benchThroughputOps / benchRounds
		}
	}
	out := map[string]benchResult{}
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-10s %12s %12s", "variant", "latency", "throughput")
	for v, t := range tot {
		r := benchResult{latency: t.seq / time.Duration(t.seqOps), throughput: float64(t.parOps) / t.par.Seconds()}
		out[variants[v].name] = r
		fmt.Fprintf(&table, "\n%-10s %12s %10.0f/s", variants[v].name, r.latency.Round(time.Microsecond), r.throughput)
		b.ReportMetric(float64(r.latency.Microseconds()), variants[v].name+"-µs/op")
		b.ReportMetric(r.throughput, variants[v].name+"-ops/s")
	}
	b.Log(table.String())
	return out
}

// benchDB is a migrated database of its own, with a pool large enough for the workers.
func benchDB(b *testing.B) *pgxpool.Pool {
	b.Helper()
	db := dbtest.NewDB(b)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(b, err)
	cfg.MaxConns = benchWorkers + 2
	pool, err := pgxpool.NewWithConfig(b.Context(), cfg)
	require.NoError(b, err)
	b.Cleanup(pool.Close)
	return pool
}

// createRows inserts n rows with sql (which returns the ids) and returns the ids.
func createRows(b *testing.B, pool *pgxpool.Pool, sql string, n int) []string {
	b.Helper()
	rows, err := pool.Query(b.Context(), sql, benchScope.Tenant, n)
	require.NoError(b, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(b, err)
	require.Len(b, ids, n)
	return ids
}

const (
	createOrdersSQL = `INSERT INTO orders (id, tenant_id, total)
		SELECT 'ord_' || gen_random_uuid(), $1, 1200 FROM generate_series(1, $2) RETURNING id`
	createInvoicesSQL = `INSERT INTO invoices (id, tenant_id, amount, currency)
		SELECT 'inv_' || gen_random_uuid(), $1, 2000, 'USD' FROM generate_series(1, $2) RETURNING id`
)

func completeRequest(key, order string) *saga.Request {
	return &saga.Request{Scope: benchScope, Key: key, Method: "POST", Path: "/orders/" + order + "/complete", Body: []byte(`{}`)}
}

// BenchmarkCompareSingleTransaction: the idempotent first execution and the replay of
// complete_order against the bare business transaction (BEGIN, CompleteOrderTx, COMMIT), and
// the replay against the first execution (one round trip). The comparisons with idempotency
// written by hand are measured by the side-by-side benchmark (docs/performance.md) and
// bench/perflab's TestLabEngine.
func BenchmarkCompareSingleTransaction(b *testing.B) {
	pool := benchDB(b)
	svc, err := payments.New(&payments.Config{Pool: pool, Gateway: sim.New(nil).Gateway()})
	require.NoError(b, err)
	client := svc.Client()
	ctx := b.Context()
	n := benchLatencyOps + benchThroughputOps

	bareOrders := createRows(b, pool, createOrdersSQL, n)
	firstOrders := createRows(b, pool, createOrdersSQL, n)
	replayOrders := createRows(b, pool, createOrdersSQL, n)
	firstKeys, replayKeys := make([]string, n), make([]string, n)
	for i := range n {
		firstKeys[i], replayKeys[i] = newKey(), newKey()
		// The keys the replay variant reads are completed beforehand (this also warms the pool).
		_, err := client.Run(ctx, payments.OpCompleteOrder, completeRequest(replayKeys[i], replayOrders[i]))
		require.NoError(b, err)
	}

	b.ResetTimer()
	res := compare(b, []benchVariant{
		{"bare", func(ctx context.Context, i int) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := payments.CompleteOrderTx(ctx, tx, benchScope.Tenant, "sale_"+uuid.NewString(), bareOrders[i])
				return err
			})
		}},
		{"first", func(ctx context.Context, i int) error {
			r, err := client.Run(ctx, payments.OpCompleteOrder, completeRequest(firstKeys[i], firstOrders[i]))
			if err == nil && (r.Replayed || r.Response.Status != 200) {
				err = fmt.Errorf("first execution answered %d (replayed %v)", r.Response.Status, r.Replayed)
			}
			return err
		}},
		{"replay", func(ctx context.Context, i int) error {
			r, err := client.Run(ctx, payments.OpCompleteOrder, completeRequest(replayKeys[i], replayOrders[i]))
			if err == nil && !r.Replayed {
				err = fmt.Errorf("replay was not replayed")
			}
			return err
		}},
	})
	b.StopTimer()
	b.ReportMetric(float64(res["first"].latency)/float64(res["bare"].latency), "idempotent/bare-latency")
	b.ReportMetric(res["first"].throughput/res["bare"].throughput, "idempotent/bare-throughput")
	b.ReportMetric(res["replay"].throughput/res["first"].throughput, "replay-throughput/first")
	b.ReportMetric(float64(res["first"].latency)/float64(res["replay"].latency), "first/replay-latency")
}

// BenchmarkComparePhased: the phased payment through the engine against the same phases written
// by hand in raw SQL (the floor): BEGIN, balance check, INSERT payment, COMMIT; the charge;
// BEGIN, settle, COMMIT. "raw+journal" is that floor with the call journal written by hand as
// the engine writes it (a row before the charge in the first transaction, its outcome in the
// second), so that the ratios say what the journal costs and what the rest of the engine does.
// All charge an in-process simulator with no latency.
func BenchmarkComparePhased(b *testing.B) {
	pool := benchDB(b)
	s := sim.New(nil)
	gw := s.Gateway()
	svc, err := payments.New(&payments.Config{Pool: pool, Gateway: gw})
	require.NoError(b, err)
	client := svc.Client()
	n := benchLatencyOps + benchThroughputOps
	rawInvoices := createRows(b, pool, createInvoicesSQL, n)
	journalInvoices := createRows(b, pool, createInvoicesSQL, n)
	phasedInvoices := createRows(b, pool, createInvoicesSQL, n)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = newKey()
	}
	// Warm the pool's connections and prepared statements on both paths.
	warm := createRows(b, pool, createInvoicesSQL, 2*benchWorkers)
	for i := range benchWorkers {
		require.NoError(b, rawPayment(b.Context(), pool, gw, warm[i], true))
		_, err := client.Run(b.Context(), payments.OpCreatePayment, paymentRequest(newKey(), warm[benchWorkers+i]))
		require.NoError(b, err)
	}

	b.ResetTimer()
	res := compare(b, []benchVariant{
		{"raw", func(ctx context.Context, i int) error { return rawPayment(ctx, pool, gw, rawInvoices[i], false) }},
		{"raw+journal", func(ctx context.Context, i int) error { return rawPayment(ctx, pool, gw, journalInvoices[i], true) }},
		{"phased", func(ctx context.Context, i int) error {
			r, err := client.Run(ctx, payments.OpCreatePayment, paymentRequest(keys[i], phasedInvoices[i]))
			if err == nil && r.Response.Status != 201 {
				err = fmt.Errorf("payment answered %d: %s", r.Response.Status, r.Response.Body)
			}
			return err
		}},
	})
	b.StopTimer()
	b.ReportMetric(float64(res["phased"].latency)/float64(res["raw"].latency), "phased/raw-latency")
	b.ReportMetric(res["phased"].throughput/res["raw"].throughput, "phased/raw-throughput")
	b.ReportMetric(res["raw+journal"].throughput/res["raw"].throughput, "journal/raw-throughput")
	b.ReportMetric(res["phased"].throughput/res["raw+journal"].throughput, "phased/raw+journal-throughput")
}

func paymentRequest(key, invoice string) *saga.Request {
	return &saga.Request{Scope: benchScope, Key: key, Method: "POST", Path: "/payments", Body: []byte(paymentBody(invoice, 2000))}
}

// rawPayment is the phased payment without pgsaga: the business statements of
// examples/payments/payments.go, two transactions around the charge, no key; with journal, the
// charge's journal row written in the first and completed in the second.
func rawPayment(ctx context.Context, pool *pgxpool.Pool, gw gateway.Gateway, invoice string, journal bool) error {
	var p *payments.PendingPayment
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		if p, err = payments.ReservePaymentTx(ctx, tx, benchScope.Tenant, "pay_"+uuid.NewString(), invoice, 2000); err != nil || !journal {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline)
			VALUES ($1, $2, $3, 'charged', 1, $4, clock_timestamp(), clock_timestamp() + interval '30 seconds')`,
			benchScope.Tenant, benchScope.Actor, p.ID, gateway.DeriveKey("payment", p.ID))
		return err
	})
	if err != nil {
		return err
	}
	ref := gateway.DeriveKey("payment", p.ID)
	charge, err := gw.Send(ctx, gateway.ChargeParams{Amount: p.Amount, Currency: p.Currency, Reference: ref, IdempotencyKey: ref})
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := payments.SettlePaymentTx(ctx, tx, p.ID, string(charge.Status), charge.ID); err != nil || !journal {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE pgsaga_call SET outcome = 'succeeded', provider_id = $4, ended_at = clock_timestamp()
			WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = 'charged' AND attempt = 1`,
			benchScope.Tenant, benchScope.Actor, p.ID, charge.ID)
		return err
	})
}

// BenchmarkCompareAPIKeyReplay: what authenticating by API key (internal/apikey: one
// primary-key read per request, no cache) costs the cheapest request there is, a replay (one
// read of the key), through the HTTP handler without a network: "headers" takes the scope from
// X-Tenant-ID and X-Actor-ID, "apikey" from a Bearer key.
func BenchmarkCompareAPIKeyReplay(b *testing.B) {
	pool := benchDB(b)
	svc, err := payments.New(&payments.Config{Pool: pool, Gateway: sim.New(nil).Gateway()})
	require.NoError(b, err)
	keys := apikey.NewStore(pool)
	k, err := keys.Create(b.Context(), benchScope)
	require.NoError(b, err)
	byHeaders, err := svc.Handler(saga.HeaderScope)
	require.NoError(b, err)
	byKey, err := svc.Handler(keys.Scope)
	require.NoError(b, err)
	order := createRows(b, pool, createOrdersSQL, 1)[0]
	key := newKey()
	_, err = svc.Client().Run(b.Context(), payments.OpCompleteOrder, completeRequest(key, order))
	require.NoError(b, err)

	replay := func(h http.Handler, auth http.Header) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			req := httptest.NewRequestWithContext(ctx, "POST", "/orders/"+order+"/complete", strings.NewReader(`{}`))
			maps.Copy(req.Header, auth)
			req.Header.Set("Idempotency-Key", key)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK || rec.Header().Get(saga.HeaderReplayed) != "true" {
				return fmt.Errorf("want a replayed 200, got %d %s", rec.Code, rec.Body)
			}
			return nil
		}
	}
	b.ResetTimer()
	res := compare(b, []benchVariant{
		{"headers", replay(byHeaders, http.Header{"X-Tenant-Id": {benchScope.Tenant}, "X-Actor-Id": {benchScope.Actor}})},
		{"apikey", replay(byKey, http.Header{"Authorization": {"Bearer " + k.Secret}})},
	})
	b.StopTimer()
	b.ReportMetric(res["apikey"].throughput/res["headers"].throughput, "apikey/headers-throughput")
	b.ReportMetric(float64(res["apikey"].latency)/float64(res["headers"].latency), "apikey/headers-latency")
}
