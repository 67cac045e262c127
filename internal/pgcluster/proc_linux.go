package pgcluster

import (
	"syscall"

	"github.com/pgsaga/pgsaga/internal/pglocal"
)

// sysProcAttr returns the attributes of etcd and Patroni: their own process group (a Ctrl-C at
// the terminal reaches us, and we decide when they stop), the owner's credentials, and SIGKILL
// when our thread dies. Go sets the parent-death signal after switching credentials (which would
// clear it).
func sysProcAttr(o pglocal.Owner) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: o.Credential()}
}
