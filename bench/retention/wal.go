package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/bench/baseline"
	"github.com/pgsaga/pgsaga/bench/internal/sbsops"
	"github.com/pgsaga/pgsaga/saga"
)

// walVariant is one request path whose WAL is measured: the side-by-side harness's pgsaga
// operations and the hand-written baselines beside them, every new key a random UUID.
type walVariant struct {
	name string
	op   func(ctx context.Context, i int) error
}

// walSample is the WAL of one variant's requests in one round, from pg_walinspect.
type walSample struct {
	bytes, records, fpiBytes int64
	byManager                map[string]int64
}

// runWAL measures the WAL each request path writes: per round and variant, a CHECKPOINT, then
// -n requests at -c at once, then the WAL between the LSNs before and after (every byte the
// server wrote: the database must be this benchmark's alone). The first write of a page after
// a checkpoint logs the whole page (a full-page image), so the figure is split: the records
// themselves, which do not depend on when the last checkpoint was, and the full-page images of
// -n requests right after one, which grow with the number of distinct pages the requests touch.
func runWAL(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("wal", flag.ExitOnError)
	url := fs.String("url", "", "database URL (default: a throwaway PostgreSQL, empty)")
	n := fs.Int("n", 2000, "requests per variant per round")
	conc := fs.Int("c", 8, "requests at once")
	rounds := fs.Int("rounds", 3, "interleaved rounds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, closeDB, err := database(ctx, *url, nil)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := pool.Exec(ctx, baseline.DDL+`; CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
		return err
	}
	variants, err := walVariants(pool)
	if err != nil {
		return err
	}
	var keys int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pgsaga_key`).Scan(&keys); err != nil {
		return err
	}
	fmt.Printf("WAL per request: %d pgsaga keys in the table, %d requests a variant a round at c=%d, %d rounds, each after a CHECKPOINT\n",
		keys, *n, *conc, *rounds)
	samples := make([][]walSample, len(variants))
	for r := 0; r < *rounds; r++ {
		for v := range variants {
			s, err := measureWAL(ctx, pool, variants[v], *n, *conc)
			if err != nil {
				return fmt.Errorf("%s: %w", variants[v].name, err)
			}
			samples[v] = append(samples[v], s)
		}
	}
	per := func(x int64) float64 { return float64(x) / float64(*n) }
	median := make([]walSample, len(variants))
	for v, ss := range samples {
		median[v] = medianSample(ss)
		m := median[v]
		var managers []string
		for name, b := range m.byManager {
			if per(b) >= 10 {
				managers = append(managers, fmt.Sprintf("%s %.0f", name, per(b)))
			}
		}
		sort.Strings(managers)
		fmt.Printf("%-36s WAL %6.0f B/req: records %5.0f B (%4.1f records), full-page images %6.0f B | by resource manager, records+images: %s\n",
			variants[v].name, per(m.bytes), per(m.bytes-m.fpiBytes), float64(m.records)/float64(*n), per(m.fpiBytes), strings.Join(managers, ", "))
	}
	ratio := func(a, b int) {
		fmt.Printf("RATIO WAL %s / %s: %.2fx (records alone %.2fx)\n", variants[a].name, variants[b].name,
			float64(median[a].bytes)/float64(median[b].bytes),
			float64(median[a].bytes-median[a].fpiBytes)/float64(median[b].bytes-median[b].fpiBytes))
	}
	ratio(0, 1)
	ratio(2, 3)
	return nil
}

// medianSample is the sample of median total bytes.
func medianSample(ss []walSample) walSample {
	sorted := append([]walSample(nil), ss...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].bytes < sorted[j].bytes })
	return sorted[len(sorted)/2]
}

func measureWAL(ctx context.Context, pool *pgxpool.Pool, v walVariant, n, conc int) (walSample, error) {
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return walSample{}, err
	}
	var from string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&from); err != nil {
		return walSample{}, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, conc)
	for g := range conc {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n && errs[g] == nil; i = int(next.Add(1)) {
				errs[g] = v.op(ctx, i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return walSample{}, err
		}
	}
	s := walSample{byManager: map[string]int64{}}
	var to string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_insert_lsn() - $1::pg_lsn`, from).Scan(&to, &s.bytes); err != nil {
		return walSample{}, err
	}
	// pg_walinspect reads only WAL flushed already; the WAL writer flushes within
	// wal_writer_delay.
	for flushed := false; !flushed; {
		if err := pool.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, to).Scan(&flushed); err != nil {
			return walSample{}, err
		}
		if !flushed {
			time.Sleep(50 * time.Millisecond)
		}
	}
	rows, err := pool.Query(ctx, `SELECT "resource_manager/record_type", count, fpi_size, combined_size
		FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn)`, from, to)
	if err != nil {
		return walSample{}, err
	}
	var manager string
	var count, fpi, combined int64
	_, err = pgx.ForEachRow(rows, []any{&manager, &count, &fpi, &combined}, func() error {
		s.records += count
		s.fpiBytes += fpi
		if combined > 0 {
			s.byManager[manager] = combined
		}
		return nil
	})
	return s, err
}

// walVariants are the side-by-side harness's two pgsaga operations, each beside its
// hand-written counterpart: the single-transaction order (pgsaga-1tx, hand-1tx-idem) and the
// phased request with a call (pgsaga-phased, floor-2rt).
func walVariants(pool *pgxpool.Pool) ([]walVariant, error) {
	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: sbsops.Operations()})
	if err != nil {
		return nil, err
	}
	run := func(op string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, _ int) error {
			_, err := client.Run(ctx, op, &saga.Request{Scope: keyScope, Key: uuid.NewString(),
				Method: "POST", Path: "/" + op, Body: []byte(`{"amount":100}`)})
			return err
		}
	}
	return []walVariant{
		{"pgsaga-1tx", run(sbsops.Single)},
		{"hand-1tx-idem", func(ctx context.Context, i int) error { return baseline.HandIdempotent(ctx, pool, fmt.Sprint(i)) }},
		{"pgsaga-phased", run(sbsops.Phased)},
		{"floor-2rt", func(ctx context.Context, _ int) error { return baseline.Floor2RT(ctx, pool) }},
	}, nil
}
