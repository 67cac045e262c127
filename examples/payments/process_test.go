package payments_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// buildPgsaga builds the pgsaga binary for t's subtests.
func buildPgsaga(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the process tests build ./cmd/pgsaga with the go tool")
	bin := filepath.Join(t.TempDir(), "pgsaga")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/pgsaga/pgsaga/cmd/pgsaga").CombinedOutput()
	require.NoError(t, err, "go build ./cmd/pgsaga: %s", out)
	return bin
}

// procEnv is a database, a gateway simulator served over HTTP by the test (so its ledger can be
// read directly), and `pgsaga serve` processes on them.
type procEnv struct {
	t   *testing.T
	bin string
	db  *dbtest.DB
	sim *sim.Simulator
	// hold, while set, keeps every charge request from reaching the simulator: the request
	// waits until its client goes away. held is signalled when one arrives.
	hold   atomic.Bool
	held   chan struct{}
	gwURL  string
	client *http.Client
}

func newProcEnv(t *testing.T, bin string, latency time.Duration) *procEnv {
	t.Helper()
	p := &procEnv{t: t, bin: bin, db: dbtest.NewDB(t), sim: sim.New(&sim.Config{Faults: sim.Faults{Latency: latency}}), held: make(chan struct{}, 1), client: &http.Client{}}
	inner := p.sim.Handler()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/charges" && p.hold.Load() {
			// Reading the body to its end lets the server notice when the client goes away.
			_, _ = io.Copy(io.Discard, r.Body)
			select {
			case p.held <- struct{}{}:
			default:
			}
			<-r.Context().Done()
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)
	p.gwURL = gw.URL
	return p
}

// serve starts `pgsaga serve` with a 2s lease and returns it with its base URL. These tests are
// of crashes, not of authentication: the scope comes from the headers, on a loopback address.
func (p *procEnv) serve() (*chaos.Process, string) {
	p.t.Helper()
	proc, err := chaos.StartProcess(p.bin, []string{"serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0",
		"--insecure-scope-headers", "--database-url", p.db.URL, "--gateway-url", p.gwURL, "--lease", "2s", "--log-level", "warn"})
	require.NoError(p.t, err)
	p.t.Cleanup(func() {
		_ = proc.Kill()
		if p.t.Failed() {
			p.t.Logf("serve stderr:\n%s", proc.Stderr())
		}
	})
	m, err := proc.WaitForLine(listening, 30*time.Second)
	require.NoError(p.t, err)
	return proc, m[1]
}

// post sends a request to a serve process; err is set when no answer came (the process died).
func (p *procEnv) post(base, path, key, body string) (*reply, error) {
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewBufferString(body))
	require.NoError(p.t, err)
	req.Header.Set("X-Tenant-ID", alice.tenant)
	req.Header.Set("X-Actor-ID", alice.actor)
	req.Header.Set("Idempotency-Key", key)
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (p *procEnv) createInvoice(base string, amount int) string {
	p.t.Helper()
	r, err := p.post(base, "/invoices", newKey(), `{"amount": `+itoa(amount)+`, "currency": "USD"}`)
	require.NoError(p.t, err)
	require.Equal(p.t, http.StatusCreated, r.status, string(r.body))
	return r.json(p.t)["id"].(string)
}

// waitLeaseExpired waits until key's lease has run out on the database clock.
func (p *procEnv) waitLeaseExpired(key string) {
	p.t.Helper()
	require.Eventually(p.t, func() bool {
		var expired bool
		err := p.db.Pool.QueryRow(p.t.Context(), `SELECT status = 'started' AND locked_until <= now() FROM pgsaga_key WHERE key = $1`, key).Scan(&expired)
		return err == nil && expired
	}, 15*time.Second, 20*time.Millisecond, "the lease of %s never expired", key)
}

func (p *procEnv) count(sql string, args ...any) int {
	p.t.Helper()
	var n int
	require.NoError(p.t, p.db.Pool.QueryRow(p.t.Context(), sql, args...).Scan(&n))
	return n
}

// requirePaidOnce checks one charge, one succeeded payment carrying it, the invoice paid once,
// and that the same request replays the answer.
func (p *procEnv) requirePaidOnce(base, invoice, key, body string, first *reply) {
	p.t.Helper()
	t := p.t
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	var pay map[string]any
	require.NoError(t, json.Unmarshal(first.body, &pay))
	require.Equal(t, 1, p.sim.ChargesFor("payment:"+pay["id"].(string)))
	require.Equal(t, 1, p.sim.TotalCharges())
	require.Equal(t, p.sim.Ledger().Charges[0].ID, pay["charge_id"])
	require.Equal(t, 1, p.count(`SELECT count(*) FROM payments WHERE invoice_id = $1`, invoice))
	require.Equal(t, 1, p.count(`SELECT count(*) FROM payments WHERE id = $1 AND status = 'succeeded' AND charge_id = $2`, pay["id"], pay["charge_id"]))
	require.Equal(t, int(pay["amount"].(float64)), p.count(`SELECT paid FROM invoices WHERE id = $1`, invoice))

	again, err := p.post(base, "/payments", key, body)
	require.NoError(t, err)
	require.Equal(t, first.status, again.status)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
}

// TestRealProcesses kills and freezes real `pgsaga serve` processes mid-payment.
func TestRealProcesses(t *testing.T) {
	t.Parallel()
	bin := buildPgsaga(t)

	// kill -9 while the simulator holds the charge: the charge exists, nobody recorded it.
	t.Run("kill -9 while the charge is held", func(t *testing.T) {
		t.Parallel()
		p := newProcEnv(t, bin, 2*time.Second)
		first, base1 := p.serve()
		inv := p.createInvoice(base1, 5000)
		key, body := newKey(), paymentBody(inv, 5000)
		var lostErr error
		lost := crash.Start(func() { _, lostErr = p.post(base1, "/payments", key, body) })
		require.Eventually(t, func() bool { return p.sim.TotalCharges() == 1 }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, first.Kill())
		require.False(t, lost.Wait())
		require.Error(t, lostErr, "the killed process cannot have answered")
		require.Equal(t, 1, p.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'started' AND recovery_point = 'payment_created'`, key))
		require.Equal(t, 1, p.count(`SELECT count(*) FROM payments WHERE status = 'pending'`))

		_, base2 := p.serve()
		p.waitLeaseExpired(key)
		r, err := p.post(base2, "/payments", key, body)
		require.NoError(t, err)
		p.requirePaidOnce(base2, inv, key, body, r)
	})

	// kill -9 after the first phase committed, while the charge request has not reached the
	// provider: nothing was charged, and the retry must charge exactly once.
	t.Run("kill -9 before the charge reaches the provider", func(t *testing.T) {
		t.Parallel()
		p := newProcEnv(t, bin, 0)
		first, base1 := p.serve()
		inv := p.createInvoice(base1, 5000)
		key, body := newKey(), paymentBody(inv, 2000)
		p.hold.Store(true)
		var lostErr error
		lost := crash.Start(func() { _, lostErr = p.post(base1, "/payments", key, body) })
		select {
		case <-p.held:
		case <-time.After(10 * time.Second):
			t.Fatal("the charge request never reached the gateway")
		}
		require.NoError(t, first.Kill())
		require.False(t, lost.Wait())
		require.Error(t, lostErr, "the killed process cannot have answered")
		require.Zero(t, p.sim.TotalCharges())
		p.hold.Store(false)

		_, base2 := p.serve()
		p.waitLeaseExpired(key)
		r, err := p.post(base2, "/payments", key, body)
		require.NoError(t, err)
		p.requirePaidOnce(base2, inv, key, body, r)
	})

	// SIGSTOP while the simulator holds the charge; the lease expires; another process
	// finishes the payment; SIGCONT. The thawed process must commit nothing and answer from the
	// key (its record phase is fenced), never make a second charge.
	t.Run("SIGSTOP zombie is fenced", func(t *testing.T) {
		t.Parallel()
		p := newProcEnv(t, bin, 2*time.Second)
		a, baseA := p.serve()
		inv := p.createInvoice(baseA, 5000)
		key, body := newKey(), paymentBody(inv, 5000)
		var zombie *reply
		var zombieErr error
		answered := crash.Start(func() { zombie, zombieErr = p.post(baseA, "/payments", key, body) })
		require.Eventually(t, func() bool { return p.sim.TotalCharges() == 1 }, 10*time.Second, 5*time.Millisecond)
		require.NoError(t, a.Signal(syscall.SIGSTOP))

		_, baseB := p.serve()
		p.waitLeaseExpired(key)
		won, err := p.post(baseB, "/payments", key, body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, won.status, string(won.body))

		require.NoError(t, a.Signal(syscall.SIGCONT))
		select {
		case <-answered.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("the thawed process never answered")
		}
		if zombieErr != nil {
			t.Logf("the zombie's client got no answer: %v", zombieErr)
		} else {
			t.Logf("the zombie answered %d %s (replayed: %q)", zombie.status, zombie.body, zombie.header.Get("Idempotent-Replayed"))
			switch zombie.status {
			case http.StatusCreated:
				require.Empty(t, zombie.header.Get("Idempotent-Replayed"), "the request that started the key is not a replay: %s", zombie.body)
				require.Equal(t, won.body, zombie.body)
			case http.StatusConflict:
				require.Equal(t, "request_in_progress", zombie.code(t))
			default:
				t.Fatalf("the zombie answered %d: %s", zombie.status, zombie.body)
			}
		}
		p.requirePaidOnce(baseB, inv, key, body, won)
	})
}
