//go:build !linux

package main

import "syscall"

// childProcAttr: without Linux's parent-death signal the demo kills its child itself.
func childProcAttr() *syscall.SysProcAttr { return nil }
