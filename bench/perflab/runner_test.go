package perflab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// variant is one side of an interleaved comparison: its own database, set up once, and one
// request.
type variant struct {
	name  string
	setup func(ctx context.Context, p *pgxpool.Pool) error
	op    func(ctx context.Context, p *pgxpool.Pool, i int) error
	// pool, when set, changes the pool's config (an exec mode, say).
	pool func(*pgxpool.Config)
}

// measure is what one variant did over every round.
type measure struct {
	name    string
	seqLat  []time.Duration // sequential latencies
	seqP50  []time.Duration // each round's sequential p50
	seqCPU  cpu             // client, and the database's backends, during the sequential runs
	seqMin  cpu             // the least CPU per request of any round (interference only adds)
	rates   []float64       // concurrent throughput per round
	ops     int64
	cpu     cpu
	wal     int64
	trips   int64
	tripOps int64
}

type lab struct {
	rounds int
	seq    int           // sequential requests per variant per round (latency)
	dur    time.Duration // concurrent phase per variant per round
	conc   int
}

// quickFlag runs every experiment briefly, to check that each variant works.
var quickFlag = flag.Bool("lab.quick", false, "with -lab: one short round per variant (a smoke test, not a measurement)")

func defaultLab() lab {
	if *quickFlag {
		return lab{rounds: 1, seq: 20, dur: 100 * time.Millisecond, conc: 8}
	}
	return lab{rounds: *roundsFlag, seq: 200, dur: 1500 * time.Millisecond, conc: 8}
}

var roundsFlag = flag.Int("lab.rounds", 4, "with -lab: interleaved rounds per experiment")

type labDB struct {
	pool  *pgxpool.Pool
	trips *tripCounter
}

// compare runs the variants in interleaved rounds and prints a table with ratios to the first.
func (l lab) compare(t *testing.T, w io.Writer, title string, vs []variant) []*measure {
	t.Helper()
	ctx := context.Background()
	dbs := make([]labDB, len(vs))
	for i, v := range vs {
		trips := &tripCounter{}
		p := newDatabaseWith(t, int32(l.conc+2), trips, v.pool)
		if err := v.setup(ctx, p); err != nil {
			t.Fatalf("%s: setup: %v", v.name, err)
		}
		dbs[i] = labDB{pool: p, trips: trips}
	}
	ms := make([]*measure, len(vs))
	next := make([]atomic.Int64, len(vs))
	for i, v := range vs {
		ms[i] = &measure{name: v.name}
		for range 50 { // warm-up: connections, statement caches
			if err := v.op(ctx, dbs[i].pool, int(next[i].Add(1))); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
		}
	}
	for range l.rounds {
		for i, v := range vs {
			m, db := ms[i], dbs[i]
			t0 := db.trips.n.Load()
			b0 := backendCPU(t, db.pool)
			c0 := readCPU()
			round := make([]time.Duration, 0, l.seq)
			for range l.seq {
				s := time.Now()
				if err := v.op(ctx, db.pool, int(next[i].Add(1))); err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				round = append(round, time.Since(s))
			}
			rc, rs := readCPU().client-c0.client, backendCPU(t, db.pool).sub(b0)
			m.seqCPU.client += rc
			m.seqCPU.server += rs
			if m.seqMin.server == 0 || rs/time.Duration(l.seq) < m.seqMin.server {
				m.seqMin.server = rs / time.Duration(l.seq)
			}
			if m.seqMin.client == 0 || rc/time.Duration(l.seq) < m.seqMin.client {
				m.seqMin.client = rc / time.Duration(l.seq)
			}
			m.seqLat = append(m.seqLat, round...)
			slices.Sort(round)
			m.seqP50 = append(m.seqP50, round[len(round)/2])
			m.trips += db.trips.n.Load() - t0
			m.tripOps += int64(l.seq)

			wal0 := walLSN(t)
			c0 = readCPU()
			var done atomic.Int64
			var failed atomic.Value
			stop := time.Now().Add(l.dur)
			start := time.Now()
			var wg sync.WaitGroup
			for range l.conc {
				wg.Go(func() {
					for time.Now().Before(stop) {
						if err := v.op(ctx, db.pool, int(next[i].Add(1))); err != nil {
							failed.Store(err)
							return
						}
						done.Add(1)
					}
				})
			}
			wg.Wait()
			if err, _ := failed.Load().(error); err != nil {
				t.Fatalf("%s: %v", v.name, err)
			}
			el := time.Since(start)
			used := readCPU().sub(c0)
			m.cpu.client += used.client
			m.cpu.server += used.server
			m.wal += walLSN(t) - wal0
			m.ops += done.Load()
			m.rates = append(m.rates, float64(done.Load())/el.Seconds())
		}
	}
	report(w, title, l, ms)
	return ms
}

func walLSN(t *testing.T) int64 {
	var n int64
	if err := server.admin.QueryRow(context.Background(), `SELECT pg_current_wal_lsn() - '0/0'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// p50 is the median of the rounds' sequential p50s: a round that shared the machine with a
// burst of other work moves it less than it moves the pooled p50.
func (m *measure) p50() time.Duration {
	s := slices.Clone(m.seqP50)
	slices.Sort(s)
	return s[len(s)/2]
}

// backendCPU reads the CPU time used so far by each backend of p's database.
type backendTimes map[int]time.Duration

func backendCPU(t *testing.T, p *pgxpool.Pool) backendTimes {
	t.Helper()
	var pids []int32
	err := server.admin.QueryRow(context.Background(),
		`SELECT coalesce(array_agg(pid), '{}') FROM pg_stat_activity WHERE datname = $1`, p.Config().ConnConfig.Database).Scan(&pids)
	if err != nil {
		t.Fatal(err)
	}
	out := backendTimes{}
	for _, pid := range pids {
		out[int(pid)] = schedstat(int(pid))
	}
	return out
}

// sub is the CPU the backends used since before (a backend started since counts from zero).
func (b backendTimes) sub(before backendTimes) time.Duration {
	var d time.Duration
	for pid, t := range b {
		d += t - before[pid]
	}
	return d
}

func (m *measure) rate() float64 {
	var sum float64
	for _, r := range m.rates {
		sum += r
	}
	return sum / float64(len(m.rates))
}

// spread is the rounds' lowest and highest throughput relative to their mean.
func (m *measure) spread() (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, r := range m.rates {
		lo, hi = min(lo, r), max(hi, r)
	}
	mean := m.rate()
	return lo / mean, hi / mean
}

func (m *measure) perOp(d time.Duration) float64 { return float64(d.Microseconds()) / float64(m.ops) }

func report(w io.Writer, title string, l lab, ms []*measure) {
	base := ms[0]
	fmt.Fprintf(w, "\n### %s\n%d rounds × (%d sequential + %s at c=%d), interleaved; ratios against %q.\n\n",
		title, l.rounds, l.seq, l.dur, l.conc, base.name)
	fmt.Fprintln(w, "| variant | req/s c=8 | spread | ×base | p50 | ×base | CPU/req c=8: client | server | seq: client | backend | ×base (backend) | min: backend | ×base | WAL B/req | trips/req |")
	fmt.Fprintln(w, "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, m := range ms {
		lo, hi := m.spread()
		seq := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(m.tripOps) }
		baseSeq := float64(base.seqCPU.server.Microseconds()) / float64(base.tripOps)
		fmt.Fprintf(w, "| %s | %.0f | %.2f–%.2f | %.2f | %v | %.2f | %.0f | %.0f | %.0f | %.0f | %.2f | %.0f | %.2f | %d | %.2f |\n",
			m.name, m.rate(), lo, hi, m.rate()/base.rate(),
			m.p50().Round(time.Microsecond), float64(m.p50())/float64(base.p50()),
			m.perOp(m.cpu.client), m.perOp(m.cpu.server), seq(m.seqCPU.client), seq(m.seqCPU.server),
			seq(m.seqCPU.server)/baseSeq, float64(m.seqMin.server.Microseconds()), float64(m.seqMin.server)/float64(base.seqMin.server),
			m.wal/m.ops, float64(m.trips)/float64(m.tripOps))
	}
}

// requireLab skips an experiment unless -lab was given: they take minutes and assert nothing.
func requireLab(t *testing.T) {
	if !*labFlag {
		t.Skip("an experiment: run with -lab")
	}
}
