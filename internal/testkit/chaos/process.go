package chaos

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Process is a program under test running as a real subprocess, so that a test can kill it with
// SIGKILL (no deferred call, no rollback sent: the database sees the connection drop) or stop
// and continue it with SIGSTOP and SIGCONT (a zombie whose lease expires while it is frozen).
type Process struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout []string
	stderr bytes.Buffer
	line   chan struct{} // signalled on every new stdout line
	done   chan struct{}
	err    error
}

// StartProcess starts path with args; env entries are added to the test's environment.
func StartProcess(path string, args []string, env ...string) (*Process, error) {
	cmd := exec.Command(path, args...)
	cmd.Env = append(cmd.Environ(), env...)
	p := &Process{cmd: cmd, line: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("error piping stdout of %s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("error starting %s: %w", path, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout = append(p.stdout, sc.Text())
			p.mu.Unlock()
			select {
			case p.line <- struct{}{}:
			default:
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// WaitForLine waits until a line of stdout matches re and returns its submatches. It fails when
// the process exits first or timeout passes.
func (p *Process) WaitForLine(re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		for _, l := range p.stdout {
			if m := re.FindStringSubmatch(l); m != nil {
				p.mu.Unlock()
				return m, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-p.line:
		case <-p.done:
			return nil, fmt.Errorf("process exited (%v) before printing a line matching %q; stderr:\n%s", p.err, re, p.Stderr())
		case <-deadline.C:
			return nil, fmt.Errorf("no line matching %q after %s; stderr:\n%s", re, timeout, p.Stderr())
		}
	}
}

// Stderr is what the process wrote on stderr so far.
func (p *Process) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("error sending %s to pid %d: %w", sig, p.cmd.Process.Pid, err)
	}
	return nil
}

// Kill sends SIGKILL (which also ends a stopped process) and waits for it to be gone.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("error killing pid %d: %w", p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
