//go:build unix && !linux

package pglocal

import "syscall"

// sysProcAttr returns the attributes of initdb and postgres: their own process group and the
// owner's credentials. Outside Linux there is no parent-death signal: a server whose parent was
// killed with SIGKILL keeps running until stopped by hand.
func sysProcAttr(o owner) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if o.switchTo {
		attr.Credential = &syscall.Credential{Uid: uint32(o.uid), Gid: uint32(o.gid), Groups: []uint32{}}
	}
	return attr
}
