package main_test

import (
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

// With --max-in-flight N, the N+1th concurrent request is answered 503 at once, stores nothing
// and charges nothing; /healthz still answers; once the N finish, requests get in again.
func TestServeAnswersOverloadWith503(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--max-in-flight", "2", "--log-level", "off")...)
	secret, other := apiKey(t, w.db.URL, "t1", "alice").Secret, apiKey(t, w.db.URL, "t2", "bob").Secret
	as := func(key string) map[string]string { return bearer(secret, key) }
	invoice, otherInvoice := w.invoice("t1", 5000), w.invoice("t2", 5000)
	payment := `{"invoice_id": "` + invoice + `", "amount": 1000}`
	// Each tenant's key authenticates once, so that its requests count as its tenant's.
	for _, s := range []string{secret, other} {
		status, _, body := httpDo(t, "GET", p.url+"/invoices/"+invoice, bearer(s, ""), "")
		require.Contains(t, []int{http.StatusOK, http.StatusNotFound}, status, string(body))
	}

	// Two payments held in the gateway's answer keep both slots, one of each tenant: the
	// server is full, and neither tenant is over its share.
	_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Latency = 3 * time.Second })
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, held := range []struct{ secret, invoice string }{{secret, invoice}, {other, otherInvoice}} {
		wg.Go(func() {
			status, _, body := httpDo(t, "POST", p.url+"/payments", bearer(held.secret, uuid.NewString()),
				`{"invoice_id": "`+held.invoice+`", "amount": 1000}`)
			require.Equal(t, http.StatusCreated, status, string(body))
		})
	}
	waitUntil(t, 10*time.Second, "both payments to be at the gateway", func() bool { return w.sim.TotalCharges() == 2 })

	key := uuid.NewString()
	begin := time.Now()
	status, header, body := httpDo(t, "POST", p.url+"/payments", as(key), payment)
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	require.Less(t, time.Since(begin), time.Second, "answered at once, not queued behind the two")
	require.Contains(t, string(body), `"error":"temporarily_unavailable"`)
	require.Equal(t, "1", header.Get("Retry-After"))
	require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key), "nothing stored")
	status, _, _ = httpDo(t, "GET", p.ops+"/healthz", nil, "")
	require.Equal(t, http.StatusOK, status, "health checks are not refused by the limit")

	wg.Wait()
	_, err = w.sim.SetFaults(func(s *sim.Settings) { s.Latency = 0 })
	require.NoError(t, err)
	status, _, body = httpDo(t, "POST", p.url+"/payments", as(key), payment)
	require.Equal(t, http.StatusCreated, status, string(body))
	require.Equal(t, 3, w.sim.TotalCharges())
	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}

// serve, its operations listener and the worker's metrics server refuse headers over 64 KiB with 431.
func TestServersCapHeaders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := start(t, nil, true, serveArgs(w.db.URL, "--log-level", "off")...)
	m := start(t, nil, true, "worker", "--metrics-addr", "127.0.0.1:0", "--database-url", w.db.URL, "--log-level", "off")
	for _, url := range []string{s.url + "/invoices", s.ops + "/healthz", m.url + "/healthz"} {
		status, _, _ := httpDo(t, "GET", url, map[string]string{"X-Padding": strings.Repeat("a", 128<<10)}, "")
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status, url)
	}
}

func TestServeBadMaxInFlight(t *testing.T) {
	t.Parallel()
	requireUsage(t, pgsaga(t, nil, "serve", "--database-url", "postgres://x@127.0.0.1:1/x", "--max-in-flight", "-1"), "--max-in-flight")
}
