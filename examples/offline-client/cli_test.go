package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// buildBinary builds offline-client into dir and returns its path.
func buildBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "offline-client")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// cli runs the built binary against one queue file.
type cli struct {
	t     *testing.T
	bin   string
	queue string
	// env is added to the process's environment.
	env []string
}

type runResult struct {
	code           int
	stdout, stderr string
}

func (c *cli) command(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--queue", c.queue}, args...)...)
	cmd.Env = append(os.Environ(), c.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

func (c *cli) run(args ...string) runResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, stdout, stderr := c.command(ctx, args...)
	err := cmd.Run()
	code := 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		require.True(c.t, ok, "running %v: %v", args, err)
		code = exitErr.ExitCode()
	}
	return runResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func (c *cli) enqueue(invoice string, amount int) string {
	c.t.Helper()
	res := c.run("enqueue", "--invoice", invoice, "--amount", fmt.Sprint(amount))
	require.Equal(c.t, 0, res.code, res.stderr)
	require.Regexp(c.t, `^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\n$`, res.stdout, "the key alone on one line")
	return strings.TrimSpace(res.stdout)
}

func (c *cli) list() []string {
	c.t.Helper()
	res := c.run("list")
	require.Equal(c.t, 0, res.code, res.stderr)
	require.Empty(c.t, res.stderr)
	if res.stdout == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
}

// fastFlush are flush flags that keep retries quick in tests.
var fastFlush = []string{"--base-delay", "10ms", "--max-delay", "50ms"}

func TestOfflineClient(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t, t.TempDir())
	newCLI := func(t *testing.T) *cli {
		return &cli{t: t, bin: bin, queue: filepath.Join(t.TempDir(), "queue.db")}
	}

	t.Run("enqueue needs no server and list shows pending intents", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		require.Empty(t, c.list(), "an empty queue lists nothing")

		k1 := c.enqueue("inv_1", 2000)
		k2 := c.enqueue("inv_1", 2000)
		require.NotEqual(t, k1, k2, "two decisions, two keys")
		require.Equal(t, []string{k1 + " POST /payments pending", k2 + " POST /payments pending"}, c.list())
	})

	t.Run("the queue file is its owner's alone", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		c.enqueue("inv_1", 2000)
		info, err := os.Stat(c.queue)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "created readable by its owner only")

		for _, mode := range []os.FileMode{0o644, 0o640, 0o606} {
			require.NoError(t, os.Chmod(c.queue, mode))
			for _, args := range [][]string{{"list"}, {"enqueue", "--invoice", "inv_2", "--amount", "1"}, {"flush", "--server", "http://127.0.0.1:1"}} {
				res := c.run(args...)
				require.Equal(t, 1, res.code, "%v with mode %04o: %s", args, mode, res.stderr)
				require.Equal(t, fmt.Sprintf("offline-client: queue file cannot be used: others may read or write it: %s has mode %04o; run chmod 600 %s\n",
					c.queue, mode, c.queue), res.stderr)
				require.Empty(t, res.stdout)
			}
		}
		require.NoError(t, os.Chmod(c.queue, 0o600))
		require.Len(t, c.list(), 1, "nothing was added while refused")
	})

	t.Run("flush sends the API key from PGSAGA_API_KEY, and the queue never holds it", func(t *testing.T) {
		t.Parallel()
		auth := make(chan string, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth <- r.Header.Get("Authorization")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"pay_1"}`))
		}))
		t.Cleanup(srv.Close)
		c := newCLI(t)
		c.env = []string{"PGSAGA_API_KEY=pgs_0123456789abcdef_secret"}
		c.enqueue("inv_1", 2000)
		raw, err := os.ReadFile(c.queue)
		require.NoError(t, err)
		require.NotContains(t, string(raw), "pgs_0123456789abcdef_secret")
		res := c.run("flush", "--server", srv.URL)
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, "Bearer pgs_0123456789abcdef_secret", <-auth)
	})

	t.Run("flush submits in order, holds definitive rejections, exits 0", func(t *testing.T) {
		t.Parallel()
		// Every intent needs a retry.
		srv := newFakeServer(t, fakeOpts{invoices: map[string]int64{"inv_a": 5000, "inv_b": 5000}, failFirst: true})
		c := newCLI(t)
		kA := c.enqueue("inv_a", 2000)
		kMissing := c.enqueue("inv_missing", 100)
		kB := c.enqueue("inv_b", 1000)
		kOver := c.enqueue("inv_b", 9999)
		kA2 := c.enqueue("inv_a", 3000)

		res := c.run(append([]string{"flush", "--server", srv.URL}, fastFlush...)...)
		require.Equal(t, 0, res.code, res.stderr)
		require.Empty(t, res.stderr)
		require.Equal(t, strings.Join([]string{
			kA + " 201 payment pay_1",
			kMissing + " 404 held: not_found",
			kB + " 201 payment pay_2",
			kOver + " 422 held: amount_exceeds_balance",
			kA2 + " 201 payment pay_3",
		}, "\n")+"\n", res.stdout)
		require.Equal(t, []string{"inv_a", "inv_b", "inv_a"}, srv.Order())
		require.Equal(t, map[string]int{kA: 1, kB: 1, kA2: 1}, srv.Effects())
		require.Equal(t, []string{kMissing + " POST /payments held", kOver + " POST /payments held"}, c.list())

		// Held intents are not sent again; flush has nothing to do.
		res = c.run("flush", "--server", srv.URL)
		require.Equal(t, 0, res.code, res.stderr)
		require.Empty(t, res.stdout)
	})

	t.Run("a replayed answer is reported as such", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer(t, fakeOpts{invoices: map[string]int64{"inv_a": 5000}})
		c := newCLI(t)
		k := c.enqueue("inv_a", 2000)
		// The server already executed this key (an earlier flush was killed
		// after the server answered): flush gets the stored answer.
		srv.mu.Lock()
		srv.keys["tenant-1\x00actor-1\x00"+k] = &fakeKey{
			fingerprint: `POST /payments {"invoice_id":"inv_a","amount":2000}`,
			done:        true, status: 201, body: []byte(`{"id":"pay_9"}`), seen: 1,
		}
		srv.mu.Unlock()

		res := c.run("flush", "--server", srv.URL)
		require.Equal(t, 0, res.code, res.stderr)
		require.Equal(t, k+" 201 payment pay_9 replayed\n", res.stdout)
		require.Empty(t, srv.Effects())
		require.Empty(t, c.list())
	})

	t.Run("flush against a dead server fails within its budget and keeps the queue", func(t *testing.T) {
		t.Parallel()
		dead := newFakeServer(t, fakeOpts{})
		dead.Close()
		c := newCLI(t)
		k1 := c.enqueue("inv_1", 100)
		k2 := c.enqueue("inv_2", 100)

		start := time.Now()
		res := c.run(append([]string{"flush", "--server", dead.URL, "--max-elapsed", "500ms"}, fastFlush...)...)
		require.Less(t, time.Since(start), 20*time.Second)
		require.Equal(t, 1, res.code)
		require.Equal(t, k1+" - pending: outcome unknown\n", res.stdout)
		require.Equal(t, 1, strings.Count(res.stderr, "\n"), "one line on stderr: %q", res.stderr)
		require.Contains(t, res.stderr, "2 intent(s) still pending")
		require.Contains(t, res.stderr, "outcome unknown")
		require.Equal(t, []string{k1 + " POST /payments pending", k2 + " POST /payments pending"}, c.list())
	})

	t.Run("a queue in use by another process is refused", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer(t, fakeOpts{delay: time.Hour, invoices: map[string]int64{"inv_1": 100}, arrivals: make(chan struct{}, 100)})
		c := newCLI(t)
		c.enqueue("inv_1", 100)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		flush, _, _ := c.command(ctx, "flush", "--server", srv.URL)
		require.NoError(t, flush.Start())
		done := make(chan error, 1)
		go func() { done <- flush.Wait() }()
		waitFor(t, srv.arrivals, done)

		res := c.run("list")
		require.Equal(t, 1, res.code)
		require.Empty(t, res.stdout)
		require.Regexp(t, `^offline-client: queue file cannot be used: .*queue\.db is locked by another process`, res.stderr)
		require.Equal(t, 1, strings.Count(res.stderr, "\n"))

		require.NoError(t, flush.Process.Signal(syscall.SIGKILL))
		<-done
		srv.CloseClientConnections()
	})

	t.Run("bad usage exits 2", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		for _, args := range [][]string{
			{},
			{"bogus"},
			{"list", "--nope"},
			{"list", "extra"},
			{"enqueue", "--amount", "5"},
			{"enqueue", "--invoice", "inv_1"},
			{"enqueue", "--invoice", "inv_1", "--amount", "0"},
			{"enqueue", "--invoice", "inv_1", "--amount", "ten"},
			{"flush"},
			{"flush", "--server", "not a url"},
		} {
			res := c.run(args...)
			require.Equal(t, 2, res.code, "%v: %s", args, res.stderr)
			require.Empty(t, res.stdout, "%v", args)
			require.Equal(t, 1, strings.Count(res.stderr, "\n"), "%v: one line: %q", args, res.stderr)
		}
		res := (&cli{t: t, bin: bin}).run("--help")
		require.Equal(t, 0, res.code)
		require.Contains(t, res.stdout, "enqueue")
		require.Empty(t, c.list(), "nothing was enqueued by bad usage")
	})

	// Killing flush at any moment and running it again never submits an
	// intent twice: kill -9 lands while a request is in flight, at a random
	// one, over and over, until a flush gets through the whole queue.
	t.Run("kill -9 mid-flush and rerun: each effect exactly once", func(t *testing.T) {
		t.Parallel()
		const n = 12
		invoices := map[string]int64{}
		for i := range n {
			invoices[fmt.Sprintf("inv_%02d", i)] = 1000
		}
		srv := newFakeServer(t, fakeOpts{delay: 150 * time.Millisecond, invoices: invoices, arrivals: make(chan struct{}, 10_000)})
		c := newCLI(t)
		var keys []string
		for i := range n {
			keys = append(keys, c.enqueue(fmt.Sprintf("inv_%02d", i), 1000))
		}

		var kills, rounds int
		var outputs strings.Builder
		for ; ; rounds++ {
			require.Less(t, rounds, 10*n, "the queue never drained")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			flush, stdout, _ := c.command(ctx, append([]string{"flush", "--server", srv.URL}, fastFlush...)...)
			require.NoError(t, flush.Start())
			done := make(chan error, 1)
			go func() { done <- flush.Wait() }()

			// Kill on the k-th request this run makes, if it gets that far;
			// after enough kills, let a run finish.
			exited := false
			if kills < 2*n {
				for range 1 + rand.IntN(3) {
					if !waitFor(t, srv.arrivals, done) {
						exited = true
						break
					}
				}
			}
			if !exited && kills < 2*n {
				require.NoError(t, flush.Process.Signal(syscall.SIGKILL))
				<-done
				kills++
				cancel()
				outputs.WriteString(stdout.String())
				continue
			}
			err := <-done
			cancel()
			outputs.WriteString(stdout.String())
			if err == nil {
				break
			}
		}

		require.Empty(t, c.list(), "the queue is empty")
		effects := srv.Effects()
		for _, k := range keys {
			require.Equal(t, 1, effects[k], "intent %s took effect exactly once", k)
		}
		require.Len(t, effects, n)
		require.Len(t, srv.Order(), n)
		require.Greater(t, kills, 0)
		require.Greater(t, srv.Replays(), 0, "some answers were lost to kills and replayed")
		require.Contains(t, outputs.String(), " replayed\n")
		t.Logf("%d intents, %d kills, %d rounds, %d replays", n, kills, rounds+1, srv.Replays())
	})
}

// waitFor waits for the next request to reach the server; it returns false
// if the flush process exited first (its exit status is put back on done).
func waitFor(t *testing.T, arrivals <-chan struct{}, done chan error) bool {
	t.Helper()
	select {
	case <-arrivals:
		return true
	case err := <-done:
		done <- err
		return false
	case <-time.After(time.Minute):
		t.Fatal("no request reached the server within a minute")
		return false
	}
}
