package perflab

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
)

// TestLabStatements runs each of the engine's measured paths (single, replay, phased) 2,000
// times on its own database after a warm-up, and prints what PostgreSQL spent per statement
// (pg_stat_statements, with planning), and the key table's HOT updates.
//
//	go test ./bench/perflab -run TestLabStatements -lab -v
func TestLabStatements(t *testing.T) {
	requireLab(t)
	for _, path := range []struct {
		name, op string
		replay   bool
	}{{"single", "sbs_single", false}, {"replay", "sbs_single", true}, {"phased", "sbs_phased", false}} {
		t.Run(path.name, func(t *testing.T) {
			e := newEngine(t)
			ctx := context.Background()
			const n = 2000
			key := func(i int) string { return fmt.Sprintf("stmt-%s-%06d", path.name, i) }
			for i := range 200 {
				if _, err := e.run(path.op, key(i)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := e.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset(); SELECT pg_stat_reset()`)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				k := key(200 + i)
				if path.replay {
					k = key(i % 200)
				}
				if _, err := e.run(path.op, k); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := e.pool.Query(ctx, `SELECT calls, plans, mean_exec_time * 1000, mean_plan_time * 1000,
					shared_blks_hit::float8 / calls, wal_records::float8 / calls, wal_bytes::float8 / calls, query
				FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
				  AND calls >= $1 ORDER BY total_exec_time DESC`, n/2)
			if err != nil {
				t.Fatal(err)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(w, "%s\tcalls\tplans\texec µs\tplan µs\tblks hit\tWAL rec\tWAL B\tstatement\t\n", path.name)
			var (
				calls, plans      int64
				exec, plan, blks  float64
				walRecs, walBytes float64
				query             string
			)
			_, err = pgx.ForEachRow(rows, []any{&calls, &plans, &exec, &plan, &blks, &walRecs, &walBytes, &query}, func() error {
				q := strings.Join(strings.Fields(query), " ")
				if len(q) > 90 {
					q = q[:90]
				}
				fmt.Fprintf(w, "\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%s\t\n", calls, plans, exec, plan, blks, walRecs, walBytes, q)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var upd, hot int64
			if err := e.pool.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'pgsaga_key'`).Scan(&upd, &hot); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(w, "\tpgsaga_key updates %d, HOT %d\t\t\t\t\t\t\t\t\n", upd, hot)
			_ = w.Flush()
		})
	}
}
