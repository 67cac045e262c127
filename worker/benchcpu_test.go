package worker_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// cpuMeter reads the CPU time spent so far by this process (the workers, in-process) and by
// the PostgreSQL cluster the benchmark's database is on: on a machine shared with other work,
// the CPU a key costs compares better across runs than keys per second.
type cpuMeter struct {
	postmaster int
}

// newCPUMeter finds the postmaster of pool's server from its data directory.
func newCPUMeter(b *testing.B, pool *pgxpool.Pool) *cpuMeter {
	b.Helper()
	var dir string
	require.NoError(b, pool.QueryRow(b.Context(), `SHOW data_directory`).Scan(&dir))
	pidFile, err := os.ReadFile(dir + "/postmaster.pid")
	require.NoError(b, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	require.NoError(b, err)
	return &cpuMeter{postmaster: pid}
}

// read is the CPU time used so far: this process's, the postmaster's and its live children's,
// and what its exited children used.
func (m *cpuMeter) read() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		// The fields after the command name (which may hold spaces): state, ppid, …
		rest := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		ppid, _ := strconv.Atoi(rest[1])
		if pid != m.postmaster && ppid != m.postmaster {
			continue
		}
		// utime and stime are fields 14 and 15, cutime and cstime 16 and 17, in clock ticks.
		fields := []int{11, 12}
		if pid == m.postmaster {
			fields = append(fields, 13, 14)
		}
		for _, f := range fields {
			ticks, _ := strconv.ParseInt(rest[f], 10, 64)
			total += time.Duration(ticks) * (time.Second / 100)
		}
	}
	return total
}
