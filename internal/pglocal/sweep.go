package pglocal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// defaultBaseDir returns /dev/shm when it is a writable directory with 1 GiB free (initdb and
// every database clone are much faster in memory), else os.TempDir().
func defaultBaseDir() string {
	const shm, minFree = "/dev/shm", 1 << 30
	var st syscall.Statfs_t
	if syscall.Access(shm, 0o2|0o1 /* W_OK|X_OK */) == nil && syscall.Statfs(shm, &st) == nil &&
		uint64(st.Bavail)*uint64(st.Bsize) >= minFree {
		return shm
	}
	return os.TempDir()
}

// Sweep removes the cluster directories under baseDir ("pgsaga-pg-<pid>-*") whose owning
// process is gone: what a SIGKILLed test binary or demo leaves behind. Directories of live
// processes are left alone. A directory whose server still runs (shutting down after its parent
// died, or, where there is no parent-death signal, orphaned) is kept for a later sweep, and its
// server is sent SIGQUIT (immediate shutdown, which removes its shared memory) when its command
// line names that directory. It returns how many directories it removed. Start calls it.
func Sweep(baseDir string) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(baseDir, dirPrefix+"*"))
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, dir := range dirs {
		pid, ok := ownerPid(filepath.Base(dir), dirPrefix)
		if !ok || processAlive(pid) {
			continue
		}
		if stopOrphanServer(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// ownerPid parses "<prefix><pid>-<random>" ("pgsaga-pg-<pid>-<random>" for a cluster).
func ownerPid(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	s, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// processAlive reports whether pid exists. EPERM means it exists but belongs to someone else;
// a zombie (exited, not yet reaped) counts as gone.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: trust kill(2)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, so find the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// stopOrphanServer reports whether the postmaster recorded in dir's postmaster.pid still runs,
// and if it runs on dir's data directory sends it SIGQUIT.
func stopOrphanServer(dir string) (running bool) {
	dataDir := filepath.Join(dir, "data")
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 || !processAlive(pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && strings.Contains(string(cmdline), dataDir) {
		_ = syscall.Kill(pid, syscall.SIGQUIT)
	}
	return true
}
