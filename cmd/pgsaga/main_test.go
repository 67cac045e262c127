package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// binary is the pgsaga binary built once by TestMain.
var binary string

// binDirPrefix names the directory TestMain builds into: pgsaga-cli-test-<pid>-<random>.
const binDirPrefix = "pgsaga-cli-test-"

func TestMain(m *testing.M) {
	sweepBinDirs()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", binDirPrefix, os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "pgsaga")
	// The pgsaga_chaos tag lets a test hold the binary at a point ($PGSAGA_CHAOS_PAUSE).
	build := exec.Command("go", "build", "-tags", "pgsaga_chaos", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		_ = os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "error building pgsaga: %v\n", err)
		os.Exit(1)
	}
	// dbtest.Main exits the process, so the directory is removed by the next run's sweep.
	dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.MigrateWith(payments.Migrations())})
}

// sweepBinDirs removes the build directories of test processes that are gone.
func sweepBinDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, dir := range dirs {
		rest := strings.TrimPrefix(filepath.Base(dir), binDirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(dir)
		}
	}
}

// result is what one run of the binary did.
type result struct {
	code   int
	stdout string
	stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// stderrLines are the non-empty lines the run wrote on stderr.
func (r result) stderrLines() []string {
	var lines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// pgsaga runs the binary to completion with env (plus PATH and HOME) and returns what it did.
func pgsaga(t *testing.T, env []string, args ...string) result {
	t.Helper()
	r, _ := pgsagaWithPid(t, env, args...)
	return r
}

// pgsagaWithPid is pgsaga, also returning the process id the run had.
func pgsagaWithPid(t *testing.T, env []string, args ...string) (result, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(baseEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	err := cmd.Wait()
	code := 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		require.True(t, ok, "running pgsaga %v: %v", args, err)
		code = exitErr.ExitCode()
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}, cmd.Process.Pid
}

// baseEnv is the environment every run gets: no DATABASE_URL unless a test adds one.
func baseEnv() []string {
	var env []string
	for _, name := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// requireUsage checks a bad-usage run: exit 2, exactly one line on stderr.
func requireUsage(t *testing.T, r result, contains string) {
	t.Helper()
	require.Equal(t, 2, r.code, r.String())
	require.Len(t, r.stderrLines(), 1, r.String())
	require.Contains(t, r.stderr, contains, r.String())
}

// requireFailure checks a failed run: exit 1, exactly one line on stderr.
func requireFailure(t *testing.T, r result, contains string) {
	t.Helper()
	require.Equal(t, 1, r.code, r.String())
	require.Len(t, r.stderrLines(), 1, r.String())
	require.Contains(t, r.stderr, contains, r.String())
}

// process is a long-running pgsaga command (serve, worker, gateway-sim).
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	args   []string
	url    string      // from the "listening on" line, when the command prints one
	urls   chan string // that line's URL, once
	ops    string      // from serve's "metrics and health on" line, printed before "listening on"
	opss   chan string // that line's URL, once
	begin  time.Time
	done   chan struct{}
	stderr *syncWriter
}

var (
	listening = regexp.MustCompile(`listening on (http://\S+)`)
	opsLine   = regexp.MustCompile(`metrics and health on (http://\S+)`)
)

// start runs a long-running command and, when wantURL, waits for its "listening on" line. The
// process is killed when the test ends unless it already exited.
func start(t *testing.T, env []string, wantURL bool, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(baseEnv(), env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &process{t: t, cmd: cmd, args: args, urls: make(chan string, 1), opss: make(chan string, 1), done: make(chan struct{}),
		stderr: &syncWriter{buf: &bytes.Buffer{}}}
	cmd.Stderr = p.stderr
	p.begin = time.Now()
	require.NoError(t, cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := opsLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case p.opss <- m[1]:
				default:
				}
			}
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case p.urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	if wantURL {
		p.waitURL(30 * time.Second)
	}
	return p
}

// waitURL waits up to timeout for the process's "listening on" line and sets p.url.
func (p *process) waitURL(timeout time.Duration) {
	p.t.Helper()
	select {
	case p.url = <-p.urls:
		p.t.Logf("pgsaga %s listening on %s %s after start", p.args[0], p.url, time.Since(p.begin).Round(time.Millisecond))
		select { // printed before the listening line, so already read
		case p.ops = <-p.opss:
		default:
		}
	case <-p.done:
		p.t.Fatalf("pgsaga %v exited before listening: %s", p.args, p.stderr.String())
	case <-time.After(timeout):
		p.t.Fatalf("pgsaga %v did not print its address within %s: %s", p.args, timeout, p.stderr.String())
	}
}

// stop sends sig and waits for the exit status.
func (p *process) stop(sig os.Signal) int {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("process did not stop within 30s of %v", sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// syncWriter lets the test read a process's stderr while the process writes it.
type syncWriter struct {
	mu  sync.Mutex
	buf *bytes.Buffer
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// httpDo sends a request and returns status, headers and body.
func httpDo(t *testing.T, method, url string, header map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}
