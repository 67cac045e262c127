package stripe_test

import (
	"bufio"
	"debug/buildinfo"
	"errors"
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

// stripeMockVersion is the stripe-mock the wire tests run against, as `make tools`
// (.ci/install-tools) installs it.
const stripeMockVersion = "v0.203.0"

// stripeMockFixtures are stripe-mock's own fixtures for the resources the adapter reads, with
// the PaymentIntent succeeded: stripe-mock answers every request with its fixture, and the one
// it bundles is a PaymentIntent whose payment failed (requires_payment_method).
const stripeMockFixtures = "testdata/stripe-mock-fixtures.json"

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
// into a failure, for CI (make test sets PGSAGA_REQUIRE_STRIPE_MOCK=1).
const requireStripeMock = "PGSAGA_REQUIRE_STRIPE_MOCK"

// stripeMockPath is the environment variable naming the stripe-mock binary to run, for a
// machine that keeps it elsewhere than `make tools` puts it.
const stripeMockPath = "PGSAGA_STRIPE_MOCK"

// stripeMockURL returns the base URL of a running stripe-mock, started on first use. When
// stripe-mock is not installed at the pinned version, or does not start, it skips the test
// with the reason, or fails it when PGSAGA_REQUIRE_STRIPE_MOCK=1.
func stripeMockURL(t *testing.T) string {
	t.Helper()
	mock.once.Do(func() {
		bin, err := findStripeMock()
		if err != nil {
			mock.skipWhy = fmt.Sprintf("stripe-mock %s: %v (make tools installs it)", stripeMockVersion, err)
			return
		}
		mock.url, mock.cmd, err = startStripeMock(bin)
		if err != nil {
			mock.skipWhy = fmt.Sprintf("cannot start stripe-mock %s (%s): %v", stripeMockVersion, bin, err)
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

// findStripeMock returns the stripe-mock binary to run: $PGSAGA_STRIPE_MOCK, else .tools/bin in
// the repository (where `make tools` installs it), else stripe-mock on PATH; it must have been
// built from stripe-mock at the pinned version, as its build information says.
func findStripeMock() (string, error) {
	bin := os.Getenv(stripeMockPath)
	if bin == "" {
		root, err := repositoryRoot()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(root, ".tools", "bin", "stripe-mock")
		if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
			if onPath, err := exec.LookPath("stripe-mock"); err == nil {
				bin = onPath
			}
		}
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", bin, err)
	}
	if info.Main.Path != "github.com/stripe/stripe-mock" || info.Main.Version != stripeMockVersion {
		return "", fmt.Errorf("%s is not github.com/stripe/stripe-mock %s: its build information names %q at %q",
			bin, stripeMockVersion, info.Main.Path, info.Main.Version)
	}
	return bin, nil
}

// repositoryRoot is the nearest directory above the working directory holding go.work (the
// repository's root, where the modules beside each other are listed).
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory")
		}
		dir = parent
	}
}

// startStripeMock runs bin bound to loopback on ports of its choosing, with the test fixtures,
// and returns its HTTP base URL once it listens.
func startStripeMock(bin string) (string, *exec.Cmd, error) {
	fixtures, err := filepath.Abs(stripeMockFixtures)
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0", "-fixtures", fixtures)
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
		var said []string
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				addr = strings.TrimSpace(a)
				break
			}
			said = append(said, sc.Text())
		}
		if addr == "" {
			addr = "!" + strings.Join(said, "; ")
		}
		found <- addr
		// Keep draining: a full pipe would block stripe-mock's request logging.
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case addr := <-found:
		if why, failed := strings.CutPrefix(addr, "!"); failed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return "", nil, fmt.Errorf("exited before listening: %s", why)
		}
		return "http://" + addr, cmd, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", nil, fmt.Errorf("no %q line within 30s", prefix)
	}
}
