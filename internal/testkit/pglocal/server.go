package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// errPortInUse marks a startup that failed because the TCP port was taken.
var errPortInUse = errors.New("port already in use")

// onFreePort runs start with a TCP port that was free a moment ago, again with another while
// it fails with errPortInUse, three times at most: a server that binds a port found free a
// moment before may find it taken since. name is the server's program, for errors.
func onFreePort(name string, start func(port int) error) error {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("error starting %s: finding a free TCP port: %w", name, err)
		}
		err = start(port)
		if err == nil || attempt == attempts || !errors.Is(err, errPortInUse) {
			return err
		}
	}
}

// removeUnless removes dir unless *started, for a deferred call in a server's start: a start
// that fails leaves no directory behind.
func removeUnless(started *bool, dir string) {
	if !*started {
		_ = os.RemoveAll(dir)
	}
}

// initdb creates the data directory dir/data.
func initdb(ctx context.Context, bins binaries, owner owner, dir string) error {
	cmd := exec.CommandContext(ctx, bins.initdb,
		"-D", filepath.Join(dir, "data"),
		"-U", "postgres",
		"--auth=trust",
		"-E", "UTF8",
		"--no-locale",
		"--no-sync",
		"--no-instructions",
	)
	cmd.Dir = dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = childproc.SysProcAttr(owner.credential(), syscall.SIGQUIT)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	p, err := childproc.Start(cmd)
	if err == nil {
		<-p.Exited()
		err = p.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		hint := ""
		if errors.Is(err, fs.ErrPermission) && owner.switchTo {
			hint = fmt.Sprintf(" (every parent of %s must be searchable by user %s: check Config.BaseDir)", dir, owner.name)
		}
		return fmt.Errorf("error starting postgres: running %s as user %s: %w%s; output:\n%s",
			bins.initdb, owner.name, err, hint, tail(out.Bytes()))
	}
	return nil
}

// startServer starts the postgres server and waits until a connection gets through. On error
// the server is stopped again. Its log is appended to: a Restart keeps the log of the server
// before it.
func (c *Cluster) startServer(ctx context.Context, bins binaries, owner owner, cfg *Config) error {
	proc, err := program{name: "postgres", binary: bins.postgres, args: c.serverArgs(cfg), dir: c.dir, log: c.logPath(),
		stop: syscall.SIGQUIT, ready: c.connects, readyTimeout: time.Second}.start(ctx, owner)
	if err != nil {
		return err
	}
	c.proc = proc
	return nil
}

// connects opens and closes one connection to the server.
func (c *Cluster) connects(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// program is a server program pglocal runs as a child and waits for: postgres or pgbouncer.
type program struct {
	name   string // in errors: "postgres" or "pgbouncer"
	binary string
	args   []string
	dir    string // its working directory
	log    string // its log file, appended to
	// stop is its immediate shutdown, also sent to it when the parent dies.
	stop syscall.Signal
	// ready checks that a client gets through, each call bounded by readyTimeout.
	ready        func(context.Context) error
	readyTimeout time.Duration
}

// start starts p as owner and waits until ready succeeds. Not exec.CommandContext: ctx bounds
// startup, not the program's life. On error the program is stopped (its immediate shutdown,
// SIGKILL to its process group if it lingers), and the error carries the end of its log, marked
// errPortInUse when the port was taken.
func (p program) start(ctx context.Context, owner owner) (*childproc.Process, error) {
	cmd := exec.Command(p.binary, p.args...)
	cmd.Dir = p.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = childproc.SysProcAttr(owner.credential(), p.stop)
	proc, err := childproc.StartLogged(cmd, p.log)
	if err != nil {
		return nil, fmt.Errorf("error starting %s: %w", p.name, err)
	}
	if err := waitReady(ctx, proc, p.name, p.readyTimeout, p.ready); err != nil {
		proc.Stop(p.stop, 5*time.Second)
		log := logTail(p.log)
		if strings.Contains(log, "could not bind") || strings.Contains(log, "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return nil, fmt.Errorf("error starting %s (%s): %w; its log:\n%s", p.name, p.binary, err, log)
	}
	return proc, nil
}

// waitReady calls ready every 10ms, each call bounded by timeout, until it succeeds, proc (the
// program called name in errors) exits, or ctx ends.
func waitReady(ctx context.Context, proc *childproc.Process, name string, timeout time.Duration, ready func(context.Context) error) error {
	const interval = 10 * time.Millisecond
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, timeout)
		err := ready(attemptCtx)
		cancel()
		if err == nil {
			return nil
		}
		timer := time.NewTimer(interval)
		select {
		case <-proc.Exited():
			timer.Stop()
			return fmt.Errorf("%s exited during startup: %v", name, proc.Err())
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%s not ready (%w); last connection error: %v", name, context.Cause(ctx), err)
		case <-timer.C:
		}
	}
}

// childEnv is the environment of initdb and postgres: PATH and a neutral locale, and none of the
// PG* variables of the caller, which would change what they do.
func childEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "LANG=C"}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	return env
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last lines of the file at path, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	return tail(b)
}

// tail returns the last 20 lines of b, indented.
func tail(b []byte) string {
	const maxLines = 20
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return "\t" + strings.Join(lines, "\n\t")
}
