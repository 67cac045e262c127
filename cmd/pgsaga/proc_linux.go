package main

import "syscall"

// childProcAttr makes a child process die with the demo, even when the demo is killed -9.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
