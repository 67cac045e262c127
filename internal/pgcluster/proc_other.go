//go:build unix && !linux

package pgcluster

import (
	"syscall"

	"github.com/pgsaga/pgsaga/internal/pglocal"
)

// sysProcAttr returns the attributes of etcd and Patroni: their own process group and the
// owner's credentials. Outside Linux there is no parent-death signal: the guardian alone cleans
// up after a process killed with SIGKILL.
func sysProcAttr(o pglocal.Owner) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: o.Credential()}
}
