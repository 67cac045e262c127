package main_test

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

// runOnTerminal runs the binary with stderr on a pseudo-terminal and stdout on a pipe, and
// returns what each received.
func runOnTerminal(t *testing.T, args ...string) (code int, stdout, terminal string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	cmd := exec.CommandContext(t.Context(), binary, args...)
	cmd.Env = baseEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	require.NoError(t, cmd.Start())
	tty.Close() // the child holds its own: the terminal ends when the child exits
	var screen bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, ptmx); close(copied) }() // ends with EIO once the child is gone
	err = cmd.Wait()
	<-copied
	if exitErr, ok := err.(*exec.ExitError); ok {
		return exitErr.ExitCode(), out.String(), screen.String()
	}
	require.NoError(t, err)
	return 0, out.String(), screen.String()
}

// A bulk resume longer than a second shows a progress bar on a terminal; the lines on stdout
// stay clean, and --json never shows one.
func TestResumeStuckProgressBarOnATerminal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var keys []string
	for _, actor := range []string{"a1", "a2", "a3", "a4"} {
		key, _ := w.stuckPayment("t1", actor)
		keys = append(keys, key)
	}
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE status = 'started'`)
	_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Latency = 400 * time.Millisecond })
	require.NoError(t, err)

	begin := time.Now()
	code, stdout, screen := runOnTerminal(t, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--stuck")
	require.Equal(t, 0, code, "stdout:\n%s\nterminal:\n%s", stdout, screen)
	require.Greater(t, time.Since(begin), 1500*time.Millisecond, "the resume must outlast the bar's delay")
	require.Contains(t, screen, "resuming stuck keys")
	require.Regexp(t, `[1-4]/4`, screen)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 4, stdout)
	for _, l := range lines {
		require.Regexp(t, `^t1 a[1-4] \S+ 201 Created$`, l)
	}
	require.Equal(t, 4, w.sim.TotalCharges())

	// The same on a piped stderr, or with --json: no bar.
	for _, actor := range []string{"b1", "b2", "b3"} {
		w.stuckPayment("t1", actor)
	}
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE status = 'started'`)
	code, stdout, screen = runOnTerminal(t, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--stuck", "--json")
	require.Equal(t, 0, code, stdout)
	require.Empty(t, screen)
	require.Contains(t, stdout, `"results":[`)
	require.Equal(t, 7, w.sim.TotalCharges())
}
