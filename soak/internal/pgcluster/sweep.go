package pgcluster

import (
	"path/filepath"
	"syscall"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// Sweep removes the cluster directories under baseDir ("pgsaga-pc-<pid>-*") whose owning
// process is gone, and stops the PostgreSQL servers still running in them (SIGKILL to the
// postmaster and its children): what is left when even the guardian could not clean up. Start
// calls it. It returns how many directories it removed.
func Sweep(baseDir string) (int, error) {
	return childproc.Sweep(baseDir, dirPrefix, killOrphanServers)
}

// killOrphanServers kills every PostgreSQL server still running in the cluster directory dir
// (SIGKILL to each postmaster and its children). The directory can go at once.
func killOrphanServers(dir string) (keep bool) {
	nodes, _ := filepath.Glob(filepath.Join(dir, "*", "data"))
	for _, data := range nodes {
		if pm, ok := postmasterPID(data); ok {
			procs, _ := freezePostgres(pm)
			signalAll(procs, syscall.SIGKILL)
		}
	}
	return false
}
