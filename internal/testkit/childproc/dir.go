package childproc

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NewDir creates a directory in baseDir for this process's children: prefix<pid>-<random>, pid
// being this process's, so that a later Sweep can tell when it is left over. It sweeps baseDir
// for prefix first (Sweep with stop), logging what it removed or failed to remove: what a
// process killed without cleaning up left behind is gone by the next start.
func NewDir(baseDir, prefix string, stop func(dir string) (keep bool), logger *slog.Logger) (string, error) {
	if n, err := Sweep(baseDir, prefix, stop); err != nil {
		logger.Warn("error sweeping stale directories", "base_dir", baseDir, "prefix", prefix, "error", err)
	} else if n > 0 {
		logger.Info("removed stale directories", "base_dir", baseDir, "prefix", prefix, "count", n)
	}
	return os.MkdirTemp(baseDir, fmt.Sprintf("%s%d-*", prefix, os.Getpid()))
}

// Sweep removes the directories of baseDir named prefix<pid>-* (NewDir's) whose process pid is
// gone. Directories of live processes are left alone. stop, when not nil, is given each
// directory to remove first: it stops what still runs from it and reports whether to keep the
// directory for a later sweep (a server still shutting down writes in it). It returns how many
// directories it removed.
func Sweep(baseDir, prefix string, stop func(dir string) (keep bool)) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(baseDir, prefix+"*"))
	if err != nil {
		return 0, err
	}
	removed := 0
	var errs []error
	for _, dir := range dirs {
		pid, ok := ownerPid(filepath.Base(dir), prefix)
		if !ok || Alive(pid) {
			continue
		}
		if stop != nil && stop(dir) {
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

// ownerPid parses "<prefix><pid>-<random>".
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
