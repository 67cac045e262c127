package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// TestCyclesDeleteEachGenerationOnce checks the benchmark's own bookkeeping: every cycle's GC
// deletes exactly the oldest generation (no key of a newer one, in either mode), the keys left
// are the live generations, and each deleted key left a tombstone.
func TestCyclesDeleteEachGenerationOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err := pglocal.Start(ctx, serverConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cluster.Stop() }()
	admin, closeAdmin, err := database(ctx, cluster.URL("postgres"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAdmin()

	const n = 3000
	for _, f := range []cyclesFlags{
		{mode: modeOlderThan, live: 1},
		{mode: modeOlderThan, live: 3},
		{mode: modeExpiry, live: 1, expireAfter: 2 * time.Second},
	} {
		t.Run(fmt.Sprintf("%s/live=%d", f.mode, f.live), func(t *testing.T) {
			db := fmt.Sprintf("cycles_%s_%d", strings.ReplaceAll(f.mode, "-", "_"), f.live)
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
				t.Fatal(err)
			}
			pool, closeDB, err := database(ctx, cluster.URL(db), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer closeDB()
			f.n, f.cycles = n, 2
			results, err := cycles(ctx, pool, &f, func(*cycleResult) {})
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != f.cycles {
				t.Fatalf("%d cycles ran, want %d", len(results), f.cycles)
			}
			for i, r := range results {
				if r.deleted != n || r.cut {
					t.Errorf("cycle %d deleted %d keys (cut short: %v), want the %d of the oldest generation", r.cycle, r.deleted, r.cut, n)
				}
				if r.sizes.keys != int64(n*f.live) {
					t.Errorf("cycle %d left %d keys, want the %d of %d live generations", r.cycle, r.sizes.keys, n*f.live, f.live)
				}
				if want := int64(n * (i + 1)); r.sizes.tombstoneRows != want {
					t.Errorf("cycle %d: %d tombstones, want %d (one a deleted key)", r.cycle, r.sizes.tombstoneRows, want)
				}
			}
		})
	}
}
