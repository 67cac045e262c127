// Command sidebyside measures pgsaga beside DBOS Transact Go and hand-written SQL on one
// database, in one process, in interleaved rounds so that drift hits every variant alike. It
// prints p50 (one request at a time) and throughput at -c goroutines per variant, round trips
// per request, CPU per request of this process and of the rest of the machine, and the ratios
// docs/performance.md reports.
//
//	go run ./sidebyside -url "$DATABASE_URL" [-rounds 4 -n 300 -d 2s -only REGEXP]
//
// from bench/ (the performance lab's module); without -url it starts a throwaway PostgreSQL of
// its own.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/bench/baseline"
	"github.com/pgsaga/pgsaga/bench/internal/sbsops"
	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

type counter struct{ q, b atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.q.Add(1)
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.b.Add(1)
	return ctx
}
func (c *counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

type variant struct {
	name string
	op   func(ctx context.Context, i int) error
}

var runID = uuid.NewString()[:8]

func main() {
	url := flag.String("url", "", "database URL (default: a throwaway PostgreSQL, durable, on /dev/shm)")
	seq := flag.Int("n", 300, "sequential requests per variant per round")
	dur := flag.Duration("d", 2*time.Second, "concurrent phase per variant per round")
	conc := flag.Int("c", 8, "concurrent goroutines")
	rounds := flag.Int("rounds", 4, "interleaved rounds")
	only := flag.String("only", "", "run only the variants whose name matches this regexp (ratios need both sides)")
	seqKeys := flag.Bool("sequential-keys", false, "pgsaga's first executions use run-prefixed counters as keys (default: random UUIDs, as real clients send and as the hand-written variants use)")
	flag.Parse()
	// newKey is a first execution's key: a random UUID, which lands anywhere in the key table's
	// primary key as real clients' keys do, or with -sequential-keys a counter under the run's
	// prefix, which always lands at its right edge.
	newKey := func(prefix string, i int) string {
		if *seqKeys {
			return fmt.Sprintf("%s-%s-%d", prefix, runID, i)
		}
		return uuid.NewString()
	}
	ctx := context.Background()

	if *url == "" {
		// As a production server runs: fsync on, on loopback TCP.
		cluster, err := pglocal.Start(ctx, &pglocal.Config{Fsync: true, TCP: true,
			Settings: map[string]string{"shared_buffers": "256MB"}})
		must(err)
		defer func() { _ = cluster.Stop() }()
		*url = cluster.URL("postgres")
	}
	cfg, err := pgxpool.ParseConfig(*url)
	must(err)
	cnt := &counter{}
	cfg.ConnConfig.Tracer = cnt
	cfg.MaxConns = 20
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	must(err)
	_, err = pool.Exec(ctx, baseline.DDL)
	must(err)
	_, err = migrations.Migrate(ctx, pool, nil)
	must(err)

	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: sbsops.Operations()})
	must(err)
	scope := saga.Scope{Tenant: "t-sbs", Actor: "a-sbs"}
	req := func(op, key string) *saga.Request {
		return &saga.Request{Scope: scope, Key: key, Method: "POST", Path: "/" + op, Body: []byte(`{"amount":100}`)}
	}
	// replay keys: completed once up front
	const replayKeys = 512
	for i := 0; i < replayKeys; i++ {
		_, err := client.Run(ctx, sbsops.Single, req(sbsops.Single, fmt.Sprintf("replay-%s-%d", runID, i)))
		must(err)
	}

	// DBOS
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "sbs", SystemDBPool: pool,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	must(err)
	twoStep := func(ctx dbos.Context, in string) (string, error) {
		a, err := dbos.RunAsStep(ctx, func(context.Context) (string, error) { return "one", nil }, dbos.WithStepName("one"))
		if err != nil {
			return "", err
		}
		b, err := dbos.RunAsStep(ctx, func(context.Context) (string, error) { return "two", nil }, dbos.WithStepName("two"))
		if err != nil {
			return "", err
		}
		return in + a + b, nil
	}
	dbos.RegisterWorkflow(dctx, twoStep)
	must(dbos.Launch(dctx))
	defer dbos.Shutdown(dctx, 5*time.Second)

	variants := []variant{
		{"bare-1tx (BEGIN; INSERT; COMMIT)", func(ctx context.Context, i int) error {
			return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var id int64
				return tx.QueryRow(ctx, `INSERT INTO sbs_orders(ref, amount) VALUES ($1, 100) RETURNING id`, fmt.Sprint(i)).Scan(&id)
			})
		}},
		{"hand-1tx-idem (key+INSERT+response, pgx tx)", func(ctx context.Context, i int) error {
			return baseline.HandIdempotent(ctx, pool, fmt.Sprint(i))
		}},
		{"floor-1tx-idem (one CTE statement)", func(ctx context.Context, i int) error {
			_, err := pool.Exec(ctx, `WITH o AS (INSERT INTO sbs_orders(ref, amount) VALUES ($2, 100) RETURNING id)
				INSERT INTO sbs_keys(key, phase, response) SELECT $1, 'finished', jsonb_build_object('id', o.id) FROM o`, uuid.New(), fmt.Sprint(i))
			return err
		}},
		{"pgsaga-1tx (same INSERT, idempotent)", func(ctx context.Context, i int) error {
			_, err := client.Run(ctx, sbsops.Single, req(sbsops.Single, newKey("s", i)))
			return err
		}},
		{"pgsaga-replay", func(ctx context.Context, i int) error {
			r, err := client.Run(ctx, sbsops.Single, req(sbsops.Single, fmt.Sprintf("replay-%s-%d", runID, i%replayKeys)))
			if err == nil && !r.Replayed {
				return fmt.Errorf("not replayed")
			}
			return err
		}},
		{"floor-2rt (claim; call; finish)", func(ctx context.Context, i int) error {
			return baseline.Floor2RT(ctx, pool)
		}},
		{"pgsaga-phased (2 phases + call)", func(ctx context.Context, i int) error {
			r, err := client.Run(ctx, sbsops.Phased, req(sbsops.Phased, newKey("p", i)))
			if err == nil && r.Response.Status != 201 {
				return fmt.Errorf("status %d", r.Response.Status)
			}
			return err
		}},
		{"dbos-2step", func(ctx context.Context, i int) error {
			h, err := dbos.RunWorkflow(dctx, twoStep, "x")
			if err != nil {
				return err
			}
			_, err = h.GetResult()
			return err
		}},
	}

	if *only != "" {
		re := regexp.MustCompile(*only)
		kept := variants[:0]
		for _, v := range variants {
			if re.MatchString(v.name) {
				kept = append(kept, v)
			}
		}
		variants = kept
	}
	type acc struct {
		lat        []time.Duration
		seqQ, seqB int64
		seqN       int64
		parOps     int64
		parTime    time.Duration
		parRates   []float64
		cliCPU     time.Duration // client CPU during the concurrent phases
		allCPU     time.Duration // whole machine's busy CPU during them
	}
	res := make([]acc, len(variants))
	next := make([]atomic.Int64, len(variants))
	// warm-up
	for v := range variants {
		for j := 0; j < 30; j++ {
			must(variants[v].op(ctx, int(next[v].Add(1)-1)))
		}
	}
	for r := 0; r < *rounds; r++ {
		for v := range variants {
			q0, b0 := cnt.q.Load(), cnt.b.Load()
			for j := 0; j < *seq; j++ {
				s := time.Now()
				must(variants[v].op(ctx, int(next[v].Add(1)-1)))
				res[v].lat = append(res[v].lat, time.Since(s))
			}
			res[v].seqQ += cnt.q.Load() - q0
			res[v].seqB += cnt.b.Load() - b0
			res[v].seqN += int64(*seq)
			var done atomic.Int64
			var wg sync.WaitGroup
			c0, m0 := clientCPU(), machineBusy()
			stop := time.Now().Add(*dur)
			st := time.Now()
			for g := 0; g < *conc; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(stop) {
						must(variants[v].op(ctx, int(next[v].Add(1)-1)))
						done.Add(1)
					}
				}()
			}
			wg.Wait()
			el := time.Since(st)
			res[v].cliCPU += clientCPU() - c0
			res[v].allCPU += machineBusy() - m0
			res[v].parOps += done.Load()
			res[v].parTime += el
			res[v].parRates = append(res[v].parRates, float64(done.Load())/el.Seconds())
		}
	}
	p50 := map[string]time.Duration{}
	tput := map[string]float64{}
	for v, a := range res {
		sort.Slice(a.lat, func(i, j int) bool { return a.lat[i] < a.lat[j] })
		p := a.lat[len(a.lat)/2]
		p99 := a.lat[len(a.lat)*99/100]
		rate := float64(a.parOps) / a.parTime.Seconds()
		p50[variants[v].name] = p
		tput[variants[v].name] = rate
		cli := a.cliCPU / time.Duration(a.parOps)
		srv := (a.allCPU - a.cliCPU) / time.Duration(a.parOps)
		fmt.Printf("%-44s p50=%8v p99=%8v  c=%d %7.0f req/s  round trips/req=%.2f  CPU/req: client %v, server+kernel %v\n",
			variants[v].name, p.Round(time.Microsecond), p99.Round(time.Microsecond), *conc, rate,
			float64(a.seqQ+a.seqB)/float64(a.seqN), cli.Round(time.Microsecond), srv.Round(time.Microsecond))
	}
	ratio := func(a, b string) (float64, float64) {
		if p50[a] == 0 || p50[b] == 0 {
			return 0, 0
		}
		return float64(p50[a]) / float64(p50[b]), tput[a] / tput[b]
	}
	l, t := ratio("pgsaga-1tx (same INSERT, idempotent)", "bare-1tx (BEGIN; INSERT; COMMIT)")
	fmt.Printf("RATIO 1tx/bare: latency %.2fx throughput %.2fx (context: no idempotency at all)\n", l, t)
	l, t = ratio("pgsaga-1tx (same INSERT, idempotent)", "hand-1tx-idem (key+INSERT+response, pgx tx)")
	fmt.Printf("RATIO 1tx/hand-rolled: latency %.2fx throughput %.2fx (goal <=1.0x, >=0.9x)\n", l, t)
	_, t = ratio("pgsaga-replay", "pgsaga-1tx (same INSERT, idempotent)")
	fmt.Printf("RATIO replay/first: throughput %.2fx (context)\n", t)
	_, t = ratio("pgsaga-replay", "floor-1tx-idem (one CTE statement)")
	fmt.Printf("RATIO replay/one-statement floor: throughput %.2fx (goal >=1.0x: one round trip, no transaction)\n", t)
	l, t = ratio("pgsaga-phased (2 phases + call)", "floor-2rt (claim; call; finish)")
	fmt.Printf("RATIO phased/floor: latency %.2fx throughput %.2fx (goal <=1.5x, >=0.5x)\n", l, t)
	l, t = ratio("pgsaga-phased (2 phases + call)", "dbos-2step")
	fmt.Printf("RATIO phased/dbos: latency %.2fx throughput %.2fx (goal <=0.25x, >=4x)\n", l, t)
}

// clientCPU is this process's user+system CPU so far.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineBusy is the whole machine's non-idle CPU so far (/proc/stat; Linux only, 0 elsewhere).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	var ticks int64
	for i, x := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(x, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
