package pglocal

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
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
	return childproc.Sweep(baseDir, dirPrefix, stopOrphanServer)
}

// stopOrphanServer reports whether the postmaster recorded in dir's postmaster.pid still runs,
// and if it runs on dir's data directory sends it SIGQUIT.
func stopOrphanServer(dir string) (running bool) {
	dataDir := filepath.Join(dir, "data")
	return stopOrphan(filepath.Join(dataDir, "postmaster.pid"), dataDir, syscall.SIGQUIT)
}

// stopOrphan reports whether the process recorded in pidFile still runs, and sends it sig when
// its command line names match (its data directory or configuration: not a pid reused since).
func stopOrphan(pidFile, match string, sig syscall.Signal) (running bool) {
	pid, ok := childproc.PidFile(pidFile)
	if !ok {
		return false
	}
	if strings.Contains(childproc.Cmdline(pid), match) {
		_ = syscall.Kill(pid, sig)
	}
	return true
}
