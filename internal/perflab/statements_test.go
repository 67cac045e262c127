package perflab

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestLabStatements runs each path of the engine (and the hand-written baselines) at c=8 and
// prints, per statement, what pg_stat_statements saw, and the key table's update counters.
func TestLabStatements(t *testing.T) {
	requireLab(t)
	const n = 6000
	j := journal("cte")
	j.ddl += dropChecks
	for _, v := range []variant{
		engineVariant("pgsaga-1tx", "sbs_single", false),
		engineVariant("pgsaga-replay", "sbs_single", true),
		engineVariant("pgsaga-phased", "sbs_phased", false),
		handIdem(),
		floor2rt(),
		{name: "recommended phased: claim+journal ON CONFLICT + read; fenced+journal", setup: setupKeys(j, false), op: claimFirst(j)},
	} {
		p := newDatabase(t, 10, nil)
		ctx := context.Background()
		if err := v.setup(ctx, p); err != nil {
			t.Fatal(err)
		}
		runN(t, p, v, 200, 8) // warm-up
		flushStats(t, p)
		resetStats(t, p)
		runN(t, p, v, n, 8)
		printStatements(t, p, v.name, n)
	}
}

// runN runs v's op n times from conc goroutines.
func runN(t *testing.T, p *pgxpool.Pool, v variant, n, conc int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range conc {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := v.op(context.Background(), p, i+1_000_000*int(seqRun.Add(0))); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	seqRun.Add(1)
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("%s: %v", v.name, err)
	}
}

// seqRun keeps the keys of successive runN calls apart.
var seqRun atomic.Int64

func resetStats(t *testing.T, p *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`,
		`SELECT pg_stat_statements_reset()`,
		`SELECT pg_stat_reset()`,
		`SELECT pg_stat_reset_shared('wal')`,
	} {
		if _, err := p.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
}

func printStatements(t *testing.T, p *pgxpool.Pool, name string, n int) {
	t.Helper()
	ctx := context.Background()
	rows, err := p.Query(ctx, `SELECT calls, total_exec_time, rows, shared_blks_hit, shared_blks_read,
			shared_blks_dirtied, shared_blks_written, wal_records, wal_fpi, wal_bytes, query
		FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND query NOT LIKE '%pg_stat%'
		ORDER BY total_exec_time DESC LIMIT 12`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	w := os.Stdout
	fmt.Fprintf(w, "\n#### %s (%d requests at c=8)\n\n", name, n)
	fmt.Fprintln(w, "| calls/req | mean µs | total µs/req | rows/call | blks hit/call | dirtied/call | WAL recs/call | WAL B/call | statement |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	var sumExec float64
	for rows.Next() {
		var calls, nrows, hit, read, dirtied, written, walRecs, walFPI int64
		var total float64
		var walBytes float64
		var query string
		if err := rows.Scan(&calls, &total, &nrows, &hit, &read, &dirtied, &written, &walRecs, &walFPI, &walBytes, &query); err != nil {
			t.Fatal(err)
		}
		sumExec += total
		c := float64(calls)
		fmt.Fprintf(w, "| %.2f | %.1f | %.1f | %.2f | %.1f | %.2f | %.2f | %.0f | `%s` |\n",
			c/float64(n), total*1000/c, total*1000/float64(n), float64(nrows)/c, float64(hit)/c, float64(dirtied)/c,
			float64(walRecs)/c, walBytes/c, squeeze(query, 90))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "\nexecution time of the statements above: %.1f µs/req\n", sumExec*1000/float64(n))
	upd, hot, ins, dead := flushStats(t, p)
	fmt.Fprintf(w, "key tables (and journal): %d inserts, %d updates of which %d HOT, %d dead tuples (counted since the reset, prefill excluded)\n", ins, upd, hot, dead)
}

// squeeze puts a statement on one line and cuts it to at most max bytes.
func squeeze(sql string, max int) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// flushStats ends p's connections (backends report their table counters when they go idle or
// exit) and reads the key tables' counters until they stop moving.
func flushStats(t *testing.T, p *pgxpool.Pool) (upd, hot, ins, dead int64) {
	t.Helper()
	p.Reset()
	deadline := time.Now().Add(10 * time.Second)
	for prev := int64(-1); ; {
		err := p.QueryRow(context.Background(), `SELECT coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_hot_upd), 0),
			coalesce(sum(n_tup_ins), 0), coalesce(sum(n_dead_tup), 0)
			FROM pg_stat_user_tables WHERE relname IN ('pgsaga_key', 'sbs_keys', 'pgsaga_call')`).Scan(&upd, &hot, &ins, &dead)
		if err != nil {
			t.Fatal(err)
		}
		if upd+ins == prev || time.Now().After(deadline) {
			return upd, hot, ins, dead
		}
		prev = upd + ins
		time.Sleep(300 * time.Millisecond) // counters flushed by exiting backends: poll, bounded
	}
}
