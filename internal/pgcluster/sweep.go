package pgcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/pgsaga/pgsaga/internal/pglocal"
)

// Sweep removes the cluster directories under baseDir ("pgsaga-pc-<pid>-*") whose owning
// process is gone, and stops the PostgreSQL servers still running in them (SIGKILL to the
// postmaster and its children): what is left when even the guardian could not clean up. Start
// calls it. It returns how many directories it removed.
func Sweep(baseDir string) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(baseDir, dirPrefix+"*"))
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, dir := range dirs {
		pid, ok := ownerPid(filepath.Base(dir))
		if !ok || pglocal.ProcessAlive(pid) {
			continue
		}
		nodes, _ := filepath.Glob(filepath.Join(dir, "*", "data"))
		for _, data := range nodes {
			if pm, ok := postmasterPID(data); ok {
				procs, _ := freezePostgres(pm)
				signalAll(procs, syscall.SIGKILL)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

// ownerPid parses "pgsaga-pc-<pid>-<random>".
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
