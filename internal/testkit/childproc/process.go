package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Process is a running child started by Start.
type Process struct {
	// Cmd is the started command. Use Exited and Err rather than Cmd.Wait, which Start's
	// goroutine calls.
	Cmd *exec.Cmd

	exited chan struct{} // closed once Cmd has exited and err is set
	err    error         // Cmd.Wait's result
}

// Start starts cmd from a goroutine locked to its OS thread, and keeps that thread until cmd
// exits. The parent-death signal (SysProcAttr) fires when the thread that forked the child exits,
// not the process, and the Go runtime ends a thread when a goroutine locked to it returns without
// unlocking: without the lock, any goroutine of the program could take the child down that way.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			p.err = cmd.Wait()
		}
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// StartLogged is Start with the child's standard output and error appended to the file at
// logPath, created when missing: a child started again keeps the log of the one before it.
func StartLogged(cmd *exec.Cmd, logPath string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening its log: %w", err)
	}
	defer f.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = f, f
	return Start(cmd)
}

// Pid is the child's process id, which is also its process group's id.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed once the child has exited and been reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the child exited (exec.Cmd.Wait's result). Only meaningful once Exited is closed.
func (p *Process) Err() error { return p.err }

// Running reports whether the child has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Stop sends sig to the child (the shutdown it understands) and waits up to timeout for it to
// exit; then it kills the child's whole group (KillGroup). It reports whether it had to kill.
// Stopping a child that has exited does nothing.
func (p *Process) Stop(sig syscall.Signal, timeout time.Duration) (killed bool) {
	if !p.Running() {
		return false
	}
	_ = p.Cmd.Process.Signal(sig)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		return false
	case <-timer.C:
		p.KillGroup()
		return true
	}
}

// KillGroup sends SIGKILL to the child's process group and waits for the child to exit. A frozen
// (SIGSTOPped) group dies as well, but is resumed first so that its processes' last words reach
// their logs.
func (p *Process) KillGroup() {
	if p.Running() {
		// Not reaped yet (Exited is closed after Wait), so the pid still names the group.
		_ = syscall.Kill(-p.Pid(), syscall.SIGCONT)
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	}
	<-p.exited
}
