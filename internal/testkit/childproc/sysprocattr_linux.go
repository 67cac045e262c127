package childproc

import "syscall"

// SysProcAttr returns the attributes of a child: a process group of its own (a Ctrl-C at the
// terminal reaches us, and we decide when the child stops), cred when it is not nil (an
// unprivileged user, for a root parent), and deathSig when the thread that started it dies (the
// child's immediate shutdown: SIGQUIT for postgres, SIGTERM for pgbouncer, SIGKILL for etcd and
// Patroni); 0 for none. Go sets the parent-death signal after switching credentials (which
// would clear it), see forkAndExecInChild1 in syscall/exec_linux.go; pglocal's
// TestKilledProcessLeavesNoServer checks it.
func SysProcAttr(cred *syscall.Credential, deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: deathSig}
}
