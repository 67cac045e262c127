package pglocal

import "syscall"

// sysProcAttr returns the attributes of the programs we run (initdb, postgres, pgbouncer): their
// own process group (a Ctrl-C at the terminal reaches us, and we decide when the server stops),
// the owner's credentials, and deathSig (postgres: SIGQUIT, immediate shutdown; pgbouncer:
// SIGTERM, immediate shutdown) when our thread dies. Go sets the parent-death signal after
// switching credentials (which would clear it), see forkAndExecInChild1 in syscall/exec_linux.go;
// TestKilledProcessLeavesNoServer checks it.
func sysProcAttr(o owner, deathSig syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
	if o.switchTo {
		attr.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{}}
	}
	return attr
}
