package main_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// waitUntil polls cond every 50ms until it holds or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestWorkerResumesAStuckKeyAndStopsOnSignal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.stuckPayment("t1", "alice")
	require.Zero(t, w.sim.TotalCharges())
	events := make(chan string, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		events <- r.Header.Get("X-Event-ID")
	}))
	t.Cleanup(hook.Close)

	p := start(t, nil, true, "worker", "--database-url", w.db.URL, "--gateway-url", w.simURL,
		"--sweep-interval", "100ms", "--metrics-addr", "127.0.0.1:0", "--webhook-url", hook.URL)
	waitUntil(t, 30*time.Second, "the worker to finish the key", func() bool {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	require.Equal(t, 1, w.sim.TotalCharges())
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded'`, invoiceID))

	// The resume recorded the payment and its payment.succeeded event together; the worker
	// delivers the event.
	var paymentID string
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT id FROM payments WHERE invoice_id = $1`, invoiceID).Scan(&paymentID))
	select {
	case id := <-events:
		require.Equal(t, "payment.succeeded:"+paymentID, id)
	case <-time.After(30 * time.Second):
		t.Fatal("the payment.succeeded event was not delivered")
	}

	status, _, body := httpDo(t, "GET", p.url+"/metrics", nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), "pgsaga_keys{")
	require.Contains(t, string(body), "pgsaga_worker_")
	status, _, _ = httpDo(t, "GET", p.url+"/healthz", nil, "")
	require.Equal(t, http.StatusOK, status)

	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}

func TestWorkerBadUsage(t *testing.T) {
	t.Parallel()
	requireUsage(t, pgsaga(t, nil, "worker", "--database-url", "postgres://x@127.0.0.1:1/x", "--sweep-interval", "often"), "--sweep-interval")
	requireUsage(t, pgsaga(t, nil, "worker", "--database-url", "postgres://x@127.0.0.1:1/x", "--lease", "10ms"), "--lease")
}

func TestServeWithWorkerFinishesAFailedPayment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--worker")...)
	as := bearer(apiKey(t, w.db.URL, "t1", "alice").Secret, uuid.NewString())
	status, _, body := httpDo(t, "POST", p.url+"/invoices", as, `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	invoiceID := strings.Split(strings.Split(string(body), `"id":"`)[1], `"`)[0]

	// The gateway is down for this request: 503, the key stays started.
	w.sim.FailNext(1000)
	key := uuid.NewString()
	as["Idempotency-Key"] = key
	payment := `{"invoice_id": "` + invoiceID + `", "amount": 2000}`
	status, _, body = httpDo(t, "POST", p.url+"/payments", as, payment)
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	require.Contains(t, string(body), "temporarily_unavailable")
	w.sim.FailNext(0)

	// The in-process worker finishes it once its next attempt is due.
	waitUntil(t, 30*time.Second, "the in-process worker to finish the key", func() bool {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	status, header, body := httpDo(t, "POST", p.url+"/payments", as, payment)
	require.Equal(t, http.StatusCreated, status, string(body))
	require.Equal(t, "true", header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, w.sim.TotalCharges())

	require.Equal(t, 0, p.stop(os.Interrupt), p.stderr.String())
}
