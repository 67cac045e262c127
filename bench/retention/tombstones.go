package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/saga"
)

// runTombstones measures what a deleted key leaves behind: -n completed keys are inserted and
// measured, deleted by one GC (each leaves a tombstone) and the tombstones measured, then the
// tombstones are let expire and deleted in bulk by the next GC, timed. -live more keys are
// deleted by the same GC but keep their tombstones, so that the expired ones are deleted among
// live ones.
func runTombstones(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tombstones", flag.ExitOnError)
	url := fs.String("url", "", "database URL (default: a throwaway PostgreSQL)")
	settings := serverSettings{}
	fs.Var(settings, "set", "a setting of the throwaway server, name=value (repeatable)")
	n := fs.Int("n", 3_000_000, "keys whose tombstones expire")
	live := fs.Int("live", 0, "keys whose tombstones stay")
	batch := fs.Int("batch", 0, "KeyDeleteExpiredParams.BatchSize (0: its default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pool, closeDB, err := database(ctx, *url, settings)
	if err != nil {
		return err
	}
	defer closeDB()
	var hasTombstones bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('pgsaga_key_tombstone') IS NOT NULL`).Scan(&hasTombstones); err != nil {
		return err
	}
	if !hasTombstones {
		return fmt.Errorf("this schema has no tombstone table")
	}
	if err := completeTemplate(ctx, pool, orderShape); err != nil {
		return err
	}
	client, err := saga.NewClient(&saga.Config{DB: pool})
	if err != nil {
		return err
	}
	// The keys whose tombstones expire completed a day ago; so did the live ones, which GC
	// keeps tombstones of for longer than the window it gives the first ones.
	const day = 24 * time.Hour
	start := time.Now()
	took, err := insertKeys(ctx, pool, *n, 365*day, day)
	if err != nil {
		return err
	}
	if *live > 0 {
		if _, err := insertKeys(ctx, pool, *live, 365*day, 0); err != nil {
			return err
		}
	}
	inserted := time.Now()
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE pgsaga_key`); err != nil {
		return err
	}
	keys, err := measureSizes(ctx, pool)
	if err != nil {
		return err
	}
	perKey := float64(keys.heap+keys.toast+keys.indexes) / float64(keys.keys)
	fmt.Printf("keys: %d inserted in %v; %s: %.0f B a key (heap %.0f B, indexes %.0f B)\n", keys.keys,
		took.Round(time.Millisecond), keys, perKey, float64(keys.heap)/float64(keys.keys), float64(keys.indexes)/float64(keys.keys))

	// The expiring tombstones' window ends lead after their keys were inserted: after this GC
	// (estimated at 10,000 keys/s, conservatively) has written them all.
	lead := inserted.Sub(start) + time.Duration(*n+*live)*100*time.Microsecond + 20*time.Second
	window := day + lead
	everything := time.Duration(0)
	gcStart := time.Now()
	deleted, err := client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: &everything,
		TombstoneRetention: window, BatchSize: *batch})
	if err != nil {
		return err
	}
	gcTook := time.Since(gcStart)
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE pgsaga_key, pgsaga_key_tombstone`); err != nil {
		return err
	}
	ts, err := tombstoneSizes(ctx, pool)
	if err != nil {
		return err
	}
	if ts.rows != int64(*n+*live) {
		return fmt.Errorf("GC deleted %d keys and left %d tombstones, not %d: it took longer than the window it was given", deleted, ts.rows, *n+*live)
	}
	fmt.Printf("GC by --older-than 0s: %d keys in %v (%.0f keys/s), each leaving a tombstone\n", deleted,
		gcTook.Round(time.Millisecond), float64(deleted)/gcTook.Seconds())
	perTombstone := float64(ts.heap+ts.indexes) / float64(ts.rows)
	fmt.Printf("tombstones: %d: heap %s, indexes %s: %.0f B a tombstone (heap %.0f B, primary key %.0f B, expiry index %.0f B): %.2fx a key's %.0f B\n",
		ts.rows, mb(ts.heap), mb(ts.indexes), perTombstone, float64(ts.heap)/float64(ts.rows),
		float64(ts.pkey)/float64(ts.rows), float64(ts.expiry)/float64(ts.rows), perTombstone/perKey, perKey)

	// Every expiring tombstone's window ends by inserted + lead.
	if wait := time.Until(inserted.Add(lead + time.Second)); wait > 0 {
		fmt.Printf("waiting %v for the tombstones to expire\n", wait.Round(time.Second))
		time.Sleep(wait)
	}
	expireStart := time.Now()
	if _, err := client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{TombstoneRetention: window, BatchSize: *batch}); err != nil {
		return err
	}
	expireTook := time.Since(expireStart)
	var left int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pgsaga_key_tombstone`).Scan(&left); err != nil {
		return err
	}
	gone := ts.rows - left
	if gone != int64(*n) {
		return fmt.Errorf("GC deleted %d tombstones, not the %d expired", gone, *n)
	}
	fmt.Printf("tombstone expiry: %d tombstones in %v (%.0f tombstones/s), %d live ones kept\n", gone,
		expireTook.Round(time.Millisecond), float64(gone)/expireTook.Seconds(), left)
	return nil
}

// tombstoneSizesResult is the tombstone table's rows and sizes in bytes (heap with TOAST).
type tombstoneSizesResult struct {
	rows, heap, indexes, pkey, expiry int64
}

func tombstoneSizes(ctx context.Context, pool *pgxpool.Pool) (tombstoneSizesResult, error) {
	var s tombstoneSizesResult
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pgsaga_key_tombstone),
		pg_total_relation_size('pgsaga_key_tombstone') - pg_indexes_size('pgsaga_key_tombstone'),
		pg_indexes_size('pgsaga_key_tombstone'), pg_relation_size('pgsaga_key_tombstone_pkey'),
		pg_relation_size('pgsaga_key_tombstone_expires_idx')`).Scan(&s.rows, &s.heap, &s.indexes, &s.pkey, &s.expiry)
	if err != nil {
		return s, fmt.Errorf("error measuring tombstones: %w", err)
	}
	return s, nil
}
