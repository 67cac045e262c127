//go:build unix && !linux

package pglocal

import "syscall"

// sysProcAttr returns the attributes of the programs we run (initdb, postgres, pgbouncer): their
// own process group and the owner's credentials. Outside Linux there is no parent-death signal
// (deathSig is unused): a server whose parent was killed with SIGKILL keeps running until
// stopped by hand or by the next Sweep.
func sysProcAttr(o owner, _ syscall.Signal) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if o.switchTo {
		attr.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{}}
	}
	return attr
}
