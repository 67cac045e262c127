package worker_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// buildPgsaga builds ./cmd/pgsaga, or skips the test when that is not possible yet.
func buildPgsaga(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the pgsaga binary; skipped with -short")
	}
	bin := filepath.Join(t.TempDir(), "pgsaga")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/pgsaga").CombinedOutput()
	if err != nil {
		t.Skipf("skipping: cannot build ./cmd/pgsaga yet: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "worker", "--help").CombinedOutput(); err != nil {
		t.Skipf("skipping: this pgsaga has no worker command yet: %v\n%s", err, out)
	}
	return bin
}

// process is a pgsaga subprocess.
type process struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr *bytes.Buffer
	done   chan error
}

func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &process{cmd: cmd, stdout: bufio.NewReader(stdout), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// line waits for a stdout line matching re and returns its first group.
func (p *process) line(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		for {
			l, err := p.stdout.ReadString('\n')
			if m := re.FindStringSubmatch(l); m != nil {
				found <- m[1]
				_, _ = io.Copy(io.Discard, p.stdout)
				return
			}
			if err != nil {
				close(found)
				return
			}
		}
	}()
	select {
	case v, ok := <-found:
		require.True(t, ok, "process ended without printing %s; stderr: %s", re, p.stderr)
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no line matching %s in 30s; stderr: %s", re, p.stderr)
		return ""
	}
}

func post(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Tenant-ID", "t1")
	req.Header.Set("X-Actor-ID", "a1")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pgsaga serve is killed with SIGKILL after the gateway charged but before it answered; a
// separate pgsaga worker process finishes the payment (by asking the gateway, not charging
// again) and stops cleanly on SIGTERM. One charge, the invoice paid.
func TestKilledServeIsFinishedByWorkerProcess(t *testing.T) {
	t.Parallel()
	bin := buildPgsaga(t)
	db := dbtest.NewDB(t)
	gw := sim.New(nil)
	gwSrv := httptest.NewServer(gw.Handler())
	t.Cleanup(gwSrv.Close)

	// The test is of the worker: the scope comes from the headers, on a loopback address.
	serve := startProcess(t, bin, "serve", "--database-url", db.URL, "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0",
		"--insecure-scope-headers", "--gateway-url", gwSrv.URL, "--lease", "2s", "--log-level", "off")
	base := serve.line(t, regexp.MustCompile(`listening on (http://\S+)`))

	status, body := post(t, base+"/invoices", "invoice-key-0001", `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, body)
	invoiceID := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(body)[1]

	// The gateway charges, then sits on its answer; serve is killed while it waits.
	_, err := gw.SetFaults(func(s *sim.Settings) { s.Latency = time.Minute })
	require.NoError(t, err)
	go post(t, base+"/payments", "payment-key-0001", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	waitFor(t, "the gateway to charge", 20*time.Second, func() bool { return gw.TotalCharges() == 1 })
	require.NoError(t, serve.cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, <-serve.done, "killed")
	serve.done <- errors.New("already waited")
	_, err = gw.SetFaults(func(s *sim.Settings) { s.Latency = 0 })
	require.NoError(t, err)
	require.Equal(t, "started", keyStatus(t, db, "payment-key-0001"), "the dead process left the key started")

	worker := startProcess(t, bin, "worker", "--database-url", db.URL, "--gateway-url", gwSrv.URL,
		"--sweep-interval", "100ms", "--lease", "2s", "--log-level", "off")
	waitFor(t, "the worker to finish the payment", 45*time.Second, func() bool {
		return keyStatus(t, db, "payment-key-0001") == "completed"
	})
	require.Equal(t, 1, gw.TotalCharges(), "no second charge")
	ledger := gw.Ledger()
	require.Len(t, ledger.ByReference, 1)
	for ref, n := range ledger.ByReference {
		require.Equal(t, 1, n, ref)
	}
	require.Equal(t, 2000, countRows(t, db.Pool, `SELECT paid FROM invoices WHERE id = $1`, invoiceID))
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded'`, invoiceID))

	require.NoError(t, worker.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-worker.done:
		require.NoError(t, err, "the worker exits 0 on SIGTERM; stderr: %s", worker.stderr)
		worker.done <- err
	case <-time.After(40 * time.Second):
		t.Fatalf("the worker did not stop within 40s of SIGTERM")
	}
}

func keyStatus(t *testing.T, db *dbtest.DB, key string) string {
	t.Helper()
	var status string
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT status FROM pgsaga_key WHERE tenant_id = 't1' AND actor_id = 'a1' AND key = $1`, key).Scan(&status))
	return status
}
