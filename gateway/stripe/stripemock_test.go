package stripe_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stripeMockVersion is the pinned stripe-mock the wire tests run against.
const stripeMockVersion = "v0.203.0"

// mock is the one stripe-mock process of this test binary, started on first use and
// stopped by TestMain.
var mock struct {
	once    sync.Once
	cmd     *exec.Cmd
	url     string
	skipWhy string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mock.cmd != nil && mock.cmd.Process != nil {
		_ = mock.cmd.Process.Kill()
		_ = mock.cmd.Wait()
	}
	os.Exit(code)
}

// requireStripeMock is the environment variable that turns a missing stripe-mock from a skip
// into a failure, for CI (.ci/run sets PGSAGA_REQUIRE_STRIPE_MOCK=1).
const requireStripeMock = "PGSAGA_REQUIRE_STRIPE_MOCK"

// stripeMockURL returns the base URL of a running stripe-mock, building it at the pinned
// version on first use. When stripe-mock cannot be built or started on this machine it skips
// the test with the reason, or fails it when PGSAGA_REQUIRE_STRIPE_MOCK=1.
func stripeMockURL(t *testing.T) string {
	t.Helper()
	mock.once.Do(func() {
		bin, err := buildStripeMock()
		if err != nil {
			mock.skipWhy = fmt.Sprintf("cannot build stripe-mock %s: %v", stripeMockVersion, err)
			return
		}
		mock.url, mock.cmd, err = startStripeMock(bin)
		if err != nil {
			mock.skipWhy = fmt.Sprintf("cannot start stripe-mock %s: %v", stripeMockVersion, err)
		}
	})
	if mock.skipWhy != "" {
		if os.Getenv(requireStripeMock) == "1" {
			t.Fatalf("%s (%s=1: stripe-mock is required)", mock.skipWhy, requireStripeMock)
		}
		t.Skip(mock.skipWhy)
	}
	return mock.url
}

// buildStripeMock installs stripe-mock at the pinned version into the user's cache
// directory (once per machine) and returns the binary's path.
func buildStripeMock() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w", err)
	}
	dir := filepath.Join(cache, "pgsaga", "tools", "stripe-mock-"+stripeMockVersion)
	bin := filepath.Join(dir, "stripe-mock")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go command not found: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Install into a private directory, then rename: concurrent test binaries never see a
	// half-written executable.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", "github.com/stripe/stripe-mock@"+stripeMockVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(filepath.Join(tmp, "stripe-mock"), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// startStripeMock runs bin bound to loopback on ports of its choosing and returns its HTTP
// base URL once it listens.
func startStripeMock(bin string) (string, *exec.Cmd, error) {
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	const prefix = "Listening for HTTP at address: "
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		addr := "" // stays empty when stripe-mock exits without listening
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				addr = strings.TrimSpace(a)
				break
			}
		}
		found <- addr
		// Keep draining: a full pipe would block stripe-mock's request logging.
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case addr := <-found:
		if addr == "" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return "", nil, fmt.Errorf("exited before listening")
		}
		return "http://" + addr, cmd, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", nil, fmt.Errorf("no %q line within 30s", prefix)
	}
}
