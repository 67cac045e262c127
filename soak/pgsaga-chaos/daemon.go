package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds a daemon's start: serve and worker wait for the database with --db-wait,
// which rides out a restart of a few seconds.
const readyTimeout = 90 * time.Second

// daemon is one long-running pgsaga process (gateway-sim, serve or worker) that the faults kill
// with SIGKILL, freeze with SIGSTOP and start again, always with the same arguments (a serve on
// the same port). Its stdout and stderr go, across restarts, to one log file. An exit that the
// harness did not cause is a violation: serve and worker must ride out whatever the faults do.
type daemon struct {
	name  string
	path  string
	args  []string
	env   []string
	ready *regexp.Regexp // the stdout line that says it is up
	log   *os.File
	tl    *timeline

	// op is held by whoever kills, stops or starts the process, so faults on one daemon do not
	// overlap.
	op sync.Mutex

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	expected bool // the harness is ending this process
	starts   int
	// unexpected lists the exits the harness did not cause, with the log's last lines.
	unexpected []string
}

func newDaemon(dir, name, path string, args, env []string, ready *regexp.Regexp, tl *timeline) (*daemon, error) {
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("error creating the log of %s: %w", name, err)
	}
	return &daemon{name: name, path: path, args: args, env: env, ready: ready, log: log, tl: tl}, nil
}

// start starts the process and waits until it prints its ready line. d.op must be held.
func (d *daemon) start(ctx context.Context) error {
	cmd := exec.Command(d.path, d.args...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stderr = d.log
	// The harness's own death (even kill -9) takes its children with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("error piping the stdout of %s: %w", d.name, err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("error starting %s: %w", d.name, err)
	}
	done := make(chan struct{})
	ready := make(chan struct{})
	d.mu.Lock()
	d.cmd, d.done, d.expected = cmd, done, false
	d.starts++
	d.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stdout)
		once := sync.Once{}
		for sc.Scan() {
			_, _ = fmt.Fprintln(d.log, sc.Text())
			if d.ready.MatchString(sc.Text()) {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		err := cmd.Wait()
		d.exited(cmd, err)
		close(done)
	}()
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		d.tl.add("%s: up (pid %d)", d.name, cmd.Process.Pid)
		return nil
	case <-done:
		return fmt.Errorf("%s exited before it was ready; its log ends:\n%s", d.name, d.logTail(20))
	case <-timer.C:
		err = fmt.Errorf("%s was not ready within %s; its log ends:\n%s", d.name, readyTimeout, d.logTail(20))
	case <-ctx.Done():
		err = ctx.Err()
	}
	d.killLocked()
	return err
}

// exited records an exit; one the harness did not cause is kept as a violation.
func (d *daemon) exited(cmd *exec.Cmd, err error) {
	d.mu.Lock()
	expected := d.expected && d.cmd == cmd
	d.mu.Unlock()
	if expected {
		return
	}
	tail := d.logTail(15)
	d.mu.Lock()
	d.unexpected = append(d.unexpected, fmt.Sprintf("%s (pid %d) exited on its own (%v); its log ends:\n%s", d.name, cmd.Process.Pid, err, tail))
	d.mu.Unlock()
	d.tl.add("%s: EXITED ON ITS OWN (pid %d): %v", d.name, cmd.Process.Pid, err)
}

// killLocked sends SIGKILL (which also ends a stopped process) and waits until the process is gone.
// d.op must be held.
func (d *daemon) killLocked() {
	cmd, done := d.ending()
	if cmd == nil {
		return
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		d.tl.add("%s: error killing pid %d: %v", d.name, cmd.Process.Pid, err)
	}
	<-done
}

// ending marks the coming exit of the last process started as the harness's doing, and returns
// that process and the channel closed when it has exited; a nil cmd when none was started.
// d.op must be held.
func (d *daemon) ending() (cmd *exec.Cmd, done chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expected = true
	return d.cmd, d.done
}

// signal sends sig to the running process. d.op must be held.
func (d *daemon) signal(sig syscall.Signal) error {
	d.mu.Lock()
	cmd := d.cmd
	d.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("%s is not running", d.name)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("error sending %s to %s (pid %d): %w", sig, d.name, cmd.Process.Pid, err)
	}
	return nil
}

// running reports whether the last process started is still alive.
func (d *daemon) running() bool {
	d.mu.Lock()
	done := d.done
	d.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// ensure starts the process again if it died (on its own or killed by a fault cut short).
func (d *daemon) ensure(ctx context.Context) error {
	d.op.Lock()
	defer d.op.Unlock()
	if d.running() {
		return nil
	}
	d.tl.add("%s: not running, starting it again", d.name)
	return d.start(ctx)
}

// stop ends the process for good: SIGCONT in case it is frozen, then SIGTERM, then SIGKILL if it
// has not exited within grace.
func (d *daemon) stop(grace time.Duration) {
	d.op.Lock()
	defer d.op.Unlock()
	cmd, done := d.ending()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// exits returns the exits the harness did not cause.
func (d *daemon) exits() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.unexpected...)
}

// logTail returns the last n lines of the daemon's log.
func (d *daemon) logTail(n int) string {
	b, err := os.ReadFile(d.log.Name())
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", d.log.Name(), err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
