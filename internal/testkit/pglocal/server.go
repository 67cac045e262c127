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

// retryPortInUse runs start, again while it fails with errPortInUse, three times at most: a
// server that binds a port freePort found free a moment before may find it taken since.
func retryPortInUse(start func() error) error {
	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := start()
		if err == nil || attempt == attempts || !errors.Is(err, errPortInUse) {
			return err
		}
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

// startServer starts the postgres server and waits until it accepts connections. On error the
// server is stopped again.
func (c *Cluster) startServer(ctx context.Context, bins binaries, owner owner, cfg *Config) error {
	// Not exec.CommandContext: ctx bounds startup, not the server's life.
	cmd := exec.Command(bins.postgres, c.serverArgs(cfg)...)
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = childproc.SysProcAttr(owner.credential(), syscall.SIGQUIT)
	// Appended to: a Restart keeps the log of the server before it.
	p, err := childproc.StartLogged(cmd, c.logPath())
	if err != nil {
		return fmt.Errorf("error starting postgres: %w", err)
	}
	c.proc = p

	if err := c.waitReady(ctx); err != nil {
		// An immediate shutdown, SIGKILL to its whole process group if it lingers.
		c.proc.Stop(syscall.SIGQUIT, 5*time.Second)
		log := logTail(c.logPath())
		if strings.Contains(log, "could not bind") || strings.Contains(log, "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return fmt.Errorf("error starting postgres (%s): %w; server log:\n%s", bins.postgres, err, log)
	}
	return nil
}

// waitReady polls with a connection until the server accepts one, the server exits or ctx ends.
func (c *Cluster) waitReady(ctx context.Context) error {
	return waitReady(ctx, c.proc, "server", time.Second, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	})
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
