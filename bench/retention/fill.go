package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/bench/baseline"
)

// fillHandSQL inserts $1 finished keys into the hand-written baseline's table, each with the
// response the pgsaga copies carry ($2), the harness's own: both sides hold as many keys, each
// as its side's requests store it.
const fillHandSQL = `INSERT INTO sbs_keys (key, phase, response, created_at)
SELECT gen_random_uuid(), 'finished', $2::jsonb, clock_timestamp() FROM generate_series(1, $1)`

// runFill fills a database with -n completed pgsaga keys (copies of the engine's own, in the
// side-by-side harness's scope) and -n finished hand-written keys (the harness's sbs_keys),
// then VACUUMs and ANALYZEs both, as autovacuum leaves a table that has stopped growing.
func runFill(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	url := fs.String("url", "", "database URL (required: a database kept for the harness, e.g. one of retention serve)")
	n := fs.Int("n", 10_000_000, "keys on each side")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		return fmt.Errorf("fill needs -url: a throwaway database would be gone when it ends")
	}
	pool, closeDB, err := database(ctx, *url, nil)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := pool.Exec(ctx, baseline.DDL); err != nil {
		return err
	}
	if err := completeTemplate(ctx, pool, harnessShape); err != nil {
		return err
	}
	var response string
	if err := pool.QueryRow(ctx, `SELECT convert_from(response_body, 'UTF8') FROM retention_template`).Scan(&response); err != nil {
		return err
	}
	start := time.Now()
	// The two sides fill at once, one connection each.
	var wg sync.WaitGroup
	var pgsagaErr, handErr error
	wg.Go(func() {
		var took time.Duration
		if took, pgsagaErr = insertKeys(ctx, pool, *n, 365*24*time.Hour, 0); pgsagaErr == nil {
			fmt.Printf("pgsaga: %d completed keys in %v (%.0f keys/s)\n", *n, took.Round(time.Second), float64(*n)/took.Seconds())
		}
	})
	wg.Go(func() {
		const batch = 10_000
		s := time.Now()
		for done := 0; done < *n && handErr == nil; done += batch {
			if _, err := pool.Exec(ctx, fillHandSQL, min(batch, *n-done), response); err != nil {
				handErr = fmt.Errorf("error filling sbs_keys: %w", err)
			}
		}
		if handErr == nil {
			took := time.Since(s)
			fmt.Printf("hand-written: %d finished keys in %v (%.0f keys/s)\n", *n, took.Round(time.Second), float64(*n)/took.Seconds())
		}
	})
	wg.Wait()
	if pgsagaErr != nil || handErr != nil {
		return errors.Join(pgsagaErr, handErr)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE pgsaga_key, sbs_keys`); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return err
	}
	var report []string
	rows, err := pool.Query(ctx, `SELECT relname, pg_relation_size(oid), pg_indexes_size(oid), pg_total_relation_size(oid)
		FROM pg_class WHERE relname IN ('pgsaga_key', 'sbs_keys') ORDER BY relname`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		var heap, idx, total int64
		if err := rows.Scan(&name, &heap, &idx, &total); err != nil {
			return err
		}
		report = append(report, fmt.Sprintf("%s: heap %s, indexes %s, total %s", name, mb(heap), mb(idx), mb(total)))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Printf("filled in %v; %s\n", time.Since(start).Round(time.Second), strings.Join(report, "; "))
	return nil
}
