package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// TestFlushAgainstServe runs the offline client against a real `pgsaga
// serve`: 20 payment intents are enqueued while the server is down, then
// flushed while flush is killed at random moments and rerun until the queue
// is empty; the API must then show exactly 20 payments, and the gateway
// simulator's ledger exactly 20 charges. The simulator (`pgsaga
// gateway-sim`) answers each charge after 50ms, so kills land while payments
// are in flight.
//
// It builds pgsaga from this tree (or uses the binary in PGSAGA_SERVE_BIN) and runs it on a
// database of its own, migrated here with `pgsaga migrate`.
func TestFlushAgainstServe(t *testing.T) {
	t.Parallel()
	serveBin := os.Getenv("PGSAGA_SERVE_BIN")
	if serveBin == "" {
		serveBin = filepath.Join(t.TempDir(), "pgsaga")
		out, err := exec.Command("go", "build", "-o", serveBin, "../../cmd/pgsaga").CombinedOutput()
		require.NoError(t, err, "go build pgsaga: %s", out)
	}
	databaseURL := dbtest.NewDB(t).URL
	const n = 20

	bin := buildBinary(t, t.TempDir())
	out, err := exec.Command(serveBin, "migrate", "--database-url", databaseURL).CombinedOutput()
	require.NoError(t, err, "pgsaga migrate: %s", out)

	gatewayURL := "http://" + freeAddr(t)
	stopGateway := startProcess(t, gatewayURL+"/_sim/info", serveBin, "gateway-sim", "--addr", gatewayURL[len("http://"):], "--latency", "50ms")
	defer stopGateway()

	addr, opsAddr := freeAddr(t), freeAddr(t)
	base := "http://" + addr
	// The terminal's API key: the server takes the tenant and actor from it.
	out, err = exec.Command(serveBin, "apikey", "create", "--tenant", "offline-"+uuid.NewString()[:8], "--actor", "pos-1",
		"--json", "--database-url", databaseURL).Output()
	require.NoError(t, err, "pgsaga apikey create")
	var key struct{ Tenant, Actor, Secret string }
	require.NoError(t, json.Unmarshal(out, &key))
	api := &serveAPI{t: t, base: base, secret: key.Secret}
	startServe := func() (stop func()) {
		return startProcess(t, "http://"+opsAddr+"/healthz", serveBin, "serve", "--addr", addr, "--ops-addr", opsAddr,
			"--database-url", databaseURL, "--gateway-url", gatewayURL, "--lease", "2s")
	}

	// Invoices exist before the terminal goes offline.
	stop := startServe()
	var invoices []string
	for range n {
		invoices = append(invoices, api.createInvoice(2000))
	}
	stop()

	c := &cli{t: t, bin: bin, queue: filepath.Join(t.TempDir(), "queue.db"), env: []string{"PGSAGA_API_KEY=" + key.Secret}}
	for _, inv := range invoices {
		res := c.run("enqueue", "--invoice", inv, "--amount", "2000")
		require.Equal(t, 0, res.code, res.stderr)
	}
	res := c.run(append([]string{"flush", "--server", base, "--max-elapsed", "1s"}, fastFlush...)...)
	require.Equal(t, 1, res.code, "the server is down: %s", res.stderr)
	require.Len(t, c.list(), n, "nothing leaves the queue without a definitive answer")

	stop = startServe()
	defer stop()
	kills := 0
	deadline := time.Now().Add(5 * time.Minute)
	for {
		require.True(t, time.Now().Before(deadline), "the queue never drained")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		flush, _, stderr := c.command(ctx, append([]string{"flush", "--server", base}, fastFlush...)...)
		require.NoError(t, flush.Start())
		done := make(chan error, 1)
		go func() { done <- flush.Wait() }()
		if kills < 10 {
			select {
			case err := <-done:
				done <- err
			case <-time.After(time.Duration(rand.IntN(250)) * time.Millisecond):
				_ = flush.Process.Signal(syscall.SIGKILL)
				kills++
			}
		}
		err := <-done
		cancel()
		if err == nil {
			break
		}
		if stderr.Len() > 0 {
			t.Logf("flush ended with %v: %s", err, stderr)
		}
	}
	require.Empty(t, c.list())

	charges := map[string]bool{}
	for _, inv := range invoices {
		payments := api.payments(inv)
		require.Len(t, payments, 1, "invoice %s paid once", inv)
		require.Equal(t, "succeeded", payments[0].Status)
		require.NotEmpty(t, payments[0].ChargeID)
		charges[payments[0].ChargeID] = true
	}
	require.Len(t, charges, n, "one charge per payment")

	var ledger struct {
		Charges     []json.RawMessage `json:"charges"`
		ByReference map[string]int    `json:"by_reference"`
	}
	status := (&serveAPI{t: t, base: gatewayURL}).do(http.MethodGet, "/_sim/ledger", nil, &ledger)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, ledger.Charges, n, "the gateway charged each payment once")
	for ref, count := range ledger.ByReference {
		require.Equal(t, 1, count, "reference %s", ref)
	}
	t.Logf("%d intents, %d kills", n, kills)
}

// startProcess runs a pgsaga command until the returned stop is called,
// once healthURL answers 200.
func startProcess(t *testing.T, healthURL, bin string, args ...string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	require.Eventually(t, func() bool {
		resp, err := http.Get(healthURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "%s %s did not become healthy", bin, args[0])
	return func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// serveAPI calls the example payments API with one API key.
type serveAPI struct {
	t      *testing.T
	base   string
	secret string
}

type payment struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	ChargeID string `json:"charge_id"`
}

func (a *serveAPI) do(method, path string, body any, into any) int {
	a.t.Helper()
	var reader *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		reader = bytes.NewReader(b)
	} else {
		reader = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, a.base+path, reader)
	require.NoError(a.t, err)
	if a.secret != "" {
		req.Header.Set("Authorization", "Bearer "+a.secret)
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPost {
		req.Header.Set("Idempotency-Key", uuid.NewString())
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	require.NoError(a.t, json.NewDecoder(resp.Body).Decode(into))
	return resp.StatusCode
}

func (a *serveAPI) createInvoice(amount int) string {
	a.t.Helper()
	var invoice struct {
		ID string `json:"id"`
	}
	status := a.do(http.MethodPost, "/invoices", map[string]any{"amount": amount, "currency": "USD"}, &invoice)
	require.Equal(a.t, http.StatusCreated, status)
	require.NotEmpty(a.t, invoice.ID)
	return invoice.ID
}

func (a *serveAPI) payments(invoice string) []payment {
	a.t.Helper()
	var list struct {
		Payments []payment `json:"payments"`
	}
	status := a.do(http.MethodGet, "/payments?invoice_id="+url.QueryEscape(invoice), nil, &list)
	require.Equal(a.t, http.StatusOK, status)
	return list.Payments
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
