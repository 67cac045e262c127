package worker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// BenchmarkWorkerResume measures resumed keys per second, and the CPU a key costs (the workers
// and the database server together), through River (the sweep inserts resume jobs of up to
// ResumeBatchSize keys each) with 1, 2 and 4 workers over 10,000 crashed keys, each key running
// a no-op call and one atomic phase. Compare with BenchmarkResume (the direct
// resumer, no job queue) in the same run. The workers are running (and idle, each sweeping
// every 100ms) when the keys appear; the clock starts once the seed (one statement) has
// committed them.
func BenchmarkWorkerResume(b *testing.B) {
	const keys = 10_000
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			db := dbtest.NewDB(b)
			createEffectTable(b, db.Pool)
			eff := newEffects()
			for range n {
				pool, err := pgxpool.New(b.Context(), db.URL)
				require.NoError(b, err)
				b.Cleanup(pool.Close)
				c := newClient(b, pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
				startWorker(b, &worker.Config{Pool: pool, Client: c, SweepInterval: 100 * time.Millisecond})
			}
			meter := newCPUMeter(b, db.Pool)
			var elapsed, cpu time.Duration
			resumed := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				_, err := db.Pool.Exec(b.Context(), `TRUNCATE effect_rows`)
				require.NoError(b, err)
				_, err = db.Pool.Exec(b.Context(), `DELETE FROM pgsaga_key`)
				require.NoError(b, err)
				b.StartTimer()
				seedCrashed(b, db.Pool, fmt.Sprintf("bench%d", i), keys)
				start, cpuStart := time.Now(), meter.read() // the keys are committed: the running workers may see them
				deadline := time.Now().Add(5 * time.Minute)
				for countRows(b, db.Pool, `SELECT count(*) FROM effect_rows`) < keys {
					require.True(b, time.Now().Before(deadline), "timed out")
					time.Sleep(20 * time.Millisecond)
				}
				elapsed += time.Since(start)
				cpu += meter.read() - cpuStart
				resumed += keys
			}
			b.StopTimer()
			require.Equal(b, keys, countRows(b, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed' AND attempts = 2`))
			b.ReportMetric(float64(resumed)/elapsed.Seconds(), "keys/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(resumed), "cpu-µs/key")
		})
	}
}
