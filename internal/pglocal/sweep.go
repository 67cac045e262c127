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
// process is gone: what a SIGKILLed test binary or demo leaves behind. A server still running
// in such a directory (possible only where there is no parent-death signal) is killed first,
// but only when its command line names that directory. Directories of live processes are left
// alone. It returns how many directories it removed. Start calls it.
func Sweep(baseDir string) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(baseDir, dirPrefix+"*"))
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, dir := range dirs {
		pid, ok := ownerPid(filepath.Base(dir))
		if !ok || processAlive(pid) {
			continue
		}
		killOrphanServer(dir)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// ownerPid parses "pgsaga-pg-<pid>-<random>".
func ownerPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, dirPrefix)
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

// killOrphanServer SIGKILLs the postmaster recorded in dir's postmaster.pid, if that process
// is running on dir's data directory, with its process group.
func killOrphanServer(dir string) {
	dataDir := filepath.Join(dir, "data")
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || pid <= 0 || !processAlive(pid) {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), dataDir) {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
