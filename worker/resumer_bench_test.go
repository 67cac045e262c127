package worker_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// BenchmarkResume measures resumed keys per second: 10,000 keys crashed after their first
// phase, drained by 1, 2 and 4 resumers (each with its own pool, as separate processes), each key
// running a no-op call and one atomic phase that writes a row. Seeding is outside the timer.
func BenchmarkResume(b *testing.B) {
	const keys = 10_000
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("resumers=%d", n), func(b *testing.B) {
			db := dbtest.NewDB(b)
			createEffectTable(b, db.Pool)
			eff := newEffects()
			resumers := make([]*worker.Resumer, n)
			for i := range resumers {
				pool, err := pgxpool.New(b.Context(), db.URL)
				require.NoError(b, err)
				b.Cleanup(pool.Close)
				c := newClient(b, pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
				resumers[i], err = worker.NewResumer(&worker.ResumerConfig{Client: c})
				require.NoError(b, err)
			}
			var elapsed time.Duration
			resumed := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				_, err := db.Pool.Exec(b.Context(), `TRUNCATE pgsaga_key, effect_rows`)
				require.NoError(b, err)
				seedCrashed(b, db.Pool, fmt.Sprintf("bench%d", i), keys)
				_, err = db.Pool.Exec(b.Context(), `VACUUM ANALYZE pgsaga_key`)
				require.NoError(b, err)
				b.StartTimer()

				start := time.Now()
				var wg sync.WaitGroup
				for _, r := range resumers {
					wg.Go(func() {
						res, err := drain(b.Context(), r)
						if err != nil || res.Rescheduled+res.Parked > 0 {
							b.Errorf("drain: %+v, %v", res, err)
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
				resumed += keys
			}
			b.StopTimer()
			require.Equal(b, keys, countRows(b, db.Pool, `SELECT count(*) FROM effect_rows`))
			b.ReportMetric(float64(resumed)/elapsed.Seconds(), "keys/s")
		})
	}
}
