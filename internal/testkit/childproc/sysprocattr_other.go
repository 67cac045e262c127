//go:build unix && !linux

package childproc

import "syscall"

// SysProcAttr returns the attributes of a child: a process group of its own and cred when it is
// not nil. Outside Linux there is no parent-death signal (deathSig is unused): a child whose
// parent was killed with SIGKILL keeps running until stopped by hand or by the next Sweep.
func SysProcAttr(cred *syscall.Credential, _ syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}
