package childproc

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStopAsksFirst(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = SysProcAttr(nil, syscall.SIGKILL)
	p, err := Start(cmd)
	require.NoError(t, err)
	require.True(t, p.Running())
	require.True(t, Alive(p.Pid()))

	require.False(t, p.Stop(syscall.SIGTERM, 10*time.Second), "sleep exits on SIGTERM")
	require.False(t, p.Running())
	require.Error(t, p.Err(), "killed by a signal")
	require.False(t, Alive(p.Pid()))
	require.False(t, p.Stop(syscall.SIGTERM, time.Second), "stopping an exited child does nothing")
}

func TestStopKillsTheGroup(t *testing.T) {
	t.Parallel()
	// The shell ignores SIGTERM and leaves a grandchild in its group: both must go.
	cmd := exec.Command("sh", "-c", `trap "" TERM; sleep 60 & echo $!; wait`)
	cmd.SysProcAttr = SysProcAttr(nil, syscall.SIGKILL)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p, err := Start(cmd)
	require.NoError(t, err)
	var grandchild int
	_, err = fmt.Fscan(out, &grandchild)
	require.NoError(t, err)
	require.True(t, Alive(grandchild))

	require.True(t, p.Stop(syscall.SIGTERM, 200*time.Millisecond), "the shell ignores SIGTERM")
	require.False(t, p.Running())
	deadline := time.Now().Add(10 * time.Second)
	for Alive(grandchild) { // reparented, so reaped by someone else: poll
		require.True(t, time.Now().Before(deadline), "grandchild %d survived its group's SIGKILL", grandchild)
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartLoggedAppends(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "child.log")
	for _, word := range []string{"first", "second"} {
		p, err := StartLogged(exec.Command("sh", "-c", "echo "+word+"; echo "+word+" >&2"), log)
		require.NoError(t, err)
		<-p.Exited()
		require.NoError(t, p.Err())
	}
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, "first\nfirst\nsecond\nsecond\n", string(b))
}

func TestSweep(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	const prefix = "childproc-test-"
	dead := filepath.Join(base, prefix+"999999999-a") // no such process
	busy := filepath.Join(base, prefix+"999999998-b") // dead owner, something still runs in it
	mine := filepath.Join(base, fmt.Sprintf("%s%d-c", prefix, os.Getpid()))
	other := filepath.Join(base, "other-999999999-d") // another prefix
	for _, dir := range []string{dead, busy, mine, other} {
		require.NoError(t, os.Mkdir(dir, 0o700))
	}
	var stopped []string
	n, err := Sweep(base, prefix, func(dir string) bool {
		stopped = append(stopped, dir)
		return dir == busy
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.ElementsMatch(t, []string{dead, busy}, stopped, "stop sees only the directories of dead processes")
	require.NoDirExists(t, dead)
	require.DirExists(t, busy, "kept for a later sweep")
	require.DirExists(t, mine, "this process is alive")
	require.DirExists(t, other)

	dir, err := NewDir(base, prefix, nil, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(filepath.Base(dir), fmt.Sprintf("%s%d-", prefix, os.Getpid())), dir)
	require.NoDirExists(t, busy, "NewDir swept first")
}

func TestPidFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.pid")
	require.NoError(t, os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n/some/dir\n"), 0o600))
	pid, alive := PidFile(path)
	require.Equal(t, os.Getpid(), pid)
	require.True(t, alive)
	require.Contains(t, Cmdline(pid), filepath.Base(os.Args[0]))

	require.NoError(t, os.WriteFile(path, []byte("999999999\n"), 0o600))
	_, alive = PidFile(path)
	require.False(t, alive)
	_, alive = PidFile(filepath.Join(t.TempDir(), "missing.pid"))
	require.False(t, alive)
	require.Empty(t, Cmdline(999999999))
}
