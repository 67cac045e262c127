package pgcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// childEnv is the environment of etcd, Patroni and PostgreSQL: PATH, a neutral locale, HOME, and
// none of the PG*, ETCD* or PATRONI* variables of the caller, which would change what they do.
func childEnv(home string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "HOME=" + home}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	return env
}

// postmasterPID reads the pid in dataDir's postmaster.pid, and reports whether that process runs
// a postgres on dataDir (a stale file or a reused pid does not count).
func postmasterPID(dataDir string) (int, bool) {
	pid, ok := childproc.PidFile(filepath.Join(dataDir, "postmaster.pid"))
	if !ok || !strings.Contains(childproc.Cmdline(pid), dataDir) {
		return 0, false
	}
	return pid, true
}

// children lists pid's child processes from /proc.
func children(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// freezePostgres stops (SIGSTOP) the postmaster pm, then every child it has, and returns them
// all once they are stopped. Each PostgreSQL child leads a process group of its own (PostgreSQL
// makes them group leaders), so no one signal reaches them all; the postmaster, stopped first,
// forks no more meanwhile.
func freezePostgres(pm int) ([]int, error) {
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping postmaster %d: %w", pm, err)
	}
	if !waitFor(5*time.Second, func() bool {
		return childproc.State(pm) != "R" && childproc.State(pm) != "S" && childproc.State(pm) != "D"
	}) {
		return nil, fmt.Errorf("postmaster %d not stopped 5s after SIGSTOP", pm)
	}
	procs := append([]int{pm}, children(pm)...)
	for _, pid := range procs[1:] {
		_ = syscall.Kill(pid, syscall.SIGSTOP) // ESRCH: it exited meanwhile
	}
	for _, pid := range procs {
		if !waitFor(5*time.Second, func() bool { s := childproc.State(pid); return s != "R" && s != "S" && s != "D" }) {
			return procs, fmt.Errorf("process %d not stopped 5s after SIGSTOP", pid)
		}
	}
	return procs, nil
}

// signalAll sends sig to every process in pids, ignoring those already gone.
func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// waitFor polls cond every 20ms until it holds or timeout passes, and reports whether it held.
// For processes that are not our children, which cannot be waited for.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// signalGroup sends sig to process group pgid and, for SIGSTOP, waits until every process of
// the group listed in pids is stopped, so a fault is in place when the call returns. For
// Patroni, which leads a group of its own.
func signalGroup(pgid int, sig syscall.Signal, pids []int) error {
	if err := syscall.Kill(-pgid, sig); err != nil {
		return fmt.Errorf("sending %s to process group %d: %w", sig, pgid, err)
	}
	if sig != syscall.SIGSTOP {
		return nil
	}
	for _, pid := range pids {
		if !waitFor(5*time.Second, func() bool { s := childproc.State(pid); return s == "T" || s == "" || s == "Z" }) {
			return fmt.Errorf("process %d not stopped 5s after SIGSTOP", pid)
		}
	}
	return nil
}
