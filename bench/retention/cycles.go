package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/saga"
)

// The two ways users run retention GC: by each key's own expiry (the worker's periodic job,
// `pgsaga gc`), or with an override of the window (`pgsaga gc --older-than`, one-off), both
// through saga.Client.KeyDeleteExpired as the CLI and the worker call it.
const (
	modeExpiry    = "expiry"
	modeOlderThan = "older-than"
)

type cyclesFlags struct {
	url         string
	n, cycles   int
	live        int
	mode        string
	batch       int
	gcBudget    time.Duration
	expireAfter time.Duration
}

// runCycles inserts a first generation of n completed keys, then runs -cycles cycles: each
// inserts the next generation, deletes the one before by GC, and VACUUMs. It prints each
// cycle's figures and, at the end, the targets beside what was measured.
func runCycles(ctx context.Context, args []string) error {
	var f cyclesFlags
	fs := flag.NewFlagSet("cycles", flag.ExitOnError)
	fs.StringVar(&f.url, "url", "", "database URL (default: a throwaway PostgreSQL)")
	settings := serverSettings{}
	fs.Var(settings, "set", "a setting of the throwaway server, name=value (repeatable), e.g. synchronize_seqscans=off")
	fs.IntVar(&f.n, "n", 150_000, "keys per generation")
	fs.IntVar(&f.cycles, "cycles", 5, "cycles (each: insert a generation, GC the oldest, VACUUM)")
	fs.IntVar(&f.live, "live", 1, "with -mode "+modeOlderThan+": generations kept live through GC (the table holds live+1 while GC runs)")
	fs.StringVar(&f.mode, "mode", modeOlderThan, "how GC selects keys: "+modeOlderThan+" (pgsaga gc --older-than) or "+modeExpiry+" (each key's own expiry)")
	fs.IntVar(&f.batch, "batch", 0, "KeyDeleteExpiredParams.BatchSize (0: its default)")
	fs.DurationVar(&f.gcBudget, "gc-budget", 0, "stop a cycle's GC after this long and report its rate so far (0: no limit)")
	fs.DurationVar(&f.expireAfter, "expire-after", 0, "with -mode "+modeExpiry+": the first generation's retention (0: n x 100us, at least 20s); each later one's is 1.5x the cycle before's insert and GC, plus 30s")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.mode != modeExpiry && f.mode != modeOlderThan {
		return fmt.Errorf("-mode must be %s or %s, got %q", modeOlderThan, modeExpiry, f.mode)
	}
	if f.live < 1 || (f.live > 1 && f.mode != modeOlderThan) {
		return fmt.Errorf("-live must be at least 1, and more only with -mode %s", modeOlderThan)
	}
	if f.expireAfter == 0 {
		f.expireAfter = max(20*time.Second, time.Duration(f.n)*100*time.Microsecond)
	}
	pool, closeDB, err := database(ctx, f.url, settings)
	if err != nil {
		return err
	}
	defer closeDB()
	fmt.Printf("retention cycles: %d keys a generation, %d live, %d cycles, GC by %s, batch %d, request %d B, response %d B, server settings %v\n",
		f.n, f.live, f.cycles, f.mode, f.batch, requestBytes, responseBytes, settings)
	results, err := cycles(ctx, pool, &f, func(r *cycleResult) { r.print(f.n) })
	if err != nil {
		return err
	}
	summarize(results, f.n)
	return nil
}

// cycles runs f's generations and cycles on pool, calling done after each cycle.
func cycles(ctx context.Context, pool *pgxpool.Pool, f *cyclesFlags, done func(*cycleResult)) ([]cycleResult, error) {
	if err := completeTemplate(ctx, pool, orderShape); err != nil {
		return nil, err
	}
	gc, err := gcPool(ctx, pool)
	if err != nil {
		return nil, err
	}
	defer gc.Close()
	client, err := saga.NewClient(&saga.Config{DB: gc})
	if err != nil {
		return nil, err
	}
	// In older-than mode no key expires by itself: only the override deletes them. In expiry
	// mode a generation expires after the next one is inserted and before its GC: each cycle
	// waits until the generation before has expired, then inserts the next one, whose retention
	// outlasts that insert and the GC after it.
	expiresIn := 365 * 24 * time.Hour
	if f.mode == modeExpiry {
		expiresIn = f.expireAfter
	}
	// Generation g is backdated by (live+cycles-g) days: a day of traffic after the one before,
	// and --older-than's boundary half a day before the oldest generation it keeps. The first
	// -live generations are inserted before the first cycle; cycle c inserts generation
	// live+c-1 and deletes generation c-1.
	backdate := func(g int) time.Duration { return time.Duration(f.live+f.cycles-g) * 24 * time.Hour }
	starts := make([]time.Time, f.live+f.cycles)
	var prevEnd time.Time
	for g := 0; g < f.live; g++ {
		starts[g] = time.Now()
		took, err := insertKeys(ctx, pool, f.n, expiresIn, backdate(g))
		if err != nil {
			return nil, err
		}
		prevEnd = time.Now()
		fmt.Printf("generation %d: inserted %d keys in %v (%.0f keys/s)\n", g, f.n, took.Round(time.Millisecond), float64(f.n)/took.Seconds())
	}
	var results []cycleResult
	left := 0 // keys due that a GC cut short by -gc-budget left behind
	for c := 1; c <= f.cycles; c++ {
		r := cycleResult{cycle: c}
		if f.mode == modeExpiry {
			if r.waited = time.Until(prevEnd.Add(expiresIn + time.Second)); r.waited > 0 {
				time.Sleep(r.waited)
			}
			if c > 1 {
				last := results[len(results)-1]
				expiresIn = 3*(last.insert+last.gc)/2 + 30*time.Second
			}
		}
		g := f.live + c - 1
		starts[g] = time.Now()
		if r.insert, err = insertKeys(ctx, pool, f.n, expiresIn, backdate(g)); err != nil {
			return nil, err
		}
		end := time.Now()
		p := &saga.KeyDeleteExpiredParams{BatchSize: f.batch}
		if f.mode == modeOlderThan {
			// Everything completed before the day between generations c-1 and c.
			olderThan := time.Since(starts[c].Add(-backdate(c) - 12*time.Hour))
			p.OlderThan = &olderThan
		}
		cpu := backendCPU(ctx, gc)
		if r.deleted, r.gc, r.cut, err = collect(ctx, client, p, f.gcBudget); err != nil {
			return nil, err
		}
		r.gcCPU = backendCPU(ctx, gc) - cpu
		if due := f.n + left; r.deleted > due {
			return nil, fmt.Errorf("cycle %d: GC deleted %d keys, more than the %d due: the new generation expired before GC ended (raise -expire-after)", c, r.deleted, due)
		}
		left += f.n - r.deleted
		start := time.Now()
		if _, err := pool.Exec(ctx, `VACUUM`); err != nil {
			return nil, fmt.Errorf("error vacuuming: %w", err)
		}
		r.vacuum = time.Since(start)
		if r.sizes, err = measureSizes(ctx, pool); err != nil {
			return nil, err
		}
		done(&r)
		results = append(results, r)
		prevEnd = end
	}
	return results, nil
}

// collect runs GC once, within budget (0: none), and returns how many keys it deleted, how long
// it took, and whether the budget cut it short.
func collect(ctx context.Context, client *saga.Client, p *saga.KeyDeleteExpiredParams, budget time.Duration) (int, time.Duration, bool, error) {
	gcCtx, cancel := ctx, context.CancelFunc(func() {})
	if budget > 0 {
		gcCtx, cancel = context.WithTimeout(ctx, budget)
	}
	defer cancel()
	start := time.Now()
	n, err := client.KeyDeleteExpired(gcCtx, p)
	took := time.Since(start)
	if err != nil && budget > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return n, took, true, nil
	}
	return n, took, false, err
}

type cycleResult struct {
	cycle              int
	insert, gc, vacuum time.Duration
	waited             time.Duration
	gcCPU              time.Duration // the GC backend's CPU time
	deleted            int
	cut                bool
	sizes              sizes
}

func (r *cycleResult) rate() float64 { return float64(r.deleted) / r.gc.Seconds() }

// cpuPerKey is the GC backend's CPU time per deleted key, in microseconds.
func (r *cycleResult) cpuPerKey() float64 {
	return float64(r.gcCPU.Microseconds()) / float64(max(r.deleted, 1))
}

func (r *cycleResult) print(n int) {
	cut := ""
	if r.cut {
		cut = " (GC budget reached)"
	}
	if r.waited > 0 {
		cut += fmt.Sprintf(" (after waiting %v for the generation to expire)", r.waited.Round(time.Second))
	}
	fmt.Printf("cycle %d: insert %d keys %v (%.0f keys/s) | GC deleted %d keys in %v: %.0f keys/s, server CPU %.1fus a key%s | VACUUM %v | %s\n",
		r.cycle, n, r.insert.Round(time.Millisecond), float64(n)/r.insert.Seconds(), r.deleted,
		r.gc.Round(time.Millisecond), r.rate(), r.cpuPerKey(), cut, r.vacuum.Round(time.Millisecond), r.sizes)
}

// summarize prints the targets: slowest cycle at least 0.5x the fastest, the key table's size
// after the last cycle at most 1.5x its size after the first, GC at least 20,000 keys/s.
func summarize(results []cycleResult, n int) {
	if len(results) == 0 {
		return
	}
	slow, fast := results[0].rate(), results[0].rate()
	for _, r := range results {
		slow, fast = min(slow, r.rate()), max(fast, r.rate())
	}
	cheap, dear := results[0].cpuPerKey(), results[0].cpuPerKey()
	for _, r := range results {
		cheap, dear = min(cheap, r.cpuPerKey()), max(dear, r.cpuPerKey())
	}
	first, last := results[0].sizes, results[len(results)-1].sizes
	fmt.Printf("TARGET slowest/fastest GC cycle: %.2fx (goal >=0.5x): %.0f / %.0f keys/s; by server CPU a key, cheapest/dearest: %.2fx (%.1f / %.1fus)\n",
		slow/fast, slow, fast, cheap/dear, cheap, dear)
	fmt.Printf("TARGET slowest GC cycle: %.0f keys/s (goal >=20000 keys/s at 3M keys a generation; this run: %d)\n", slow, n)
	fmt.Printf("TARGET key table after the last cycle / after the first: heap %.2fx, heap+TOAST+indexes+tombstones %.2fx (goal <=1.5x)\n",
		float64(last.heap)/float64(first.heap), float64(last.total())/float64(first.total()))
}
