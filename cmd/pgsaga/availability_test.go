package main_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/worker"
)

// slowBodies is how many slow connections an attack opens: more than serve's 64 slots.
const slowBodies = 80

// bodyTimeout is serve's limit on reading a request (its headers and body).
const bodyTimeout = 30 * time.Second

// slowConn is a request whose body trickles in one byte a second, for as long as the server
// keeps the connection: what a client holding serve's doors open sends.
type slowConn struct {
	conn  net.Conn
	begin time.Time
	// cut is closed when the server closed the connection (or answered); took is when.
	cut  chan struct{}
	took time.Duration
}

// openSlow sends head (a request line and headers announcing a body of 10,000 bytes) and then
// the body, one byte a second, until the server stops reading.
func openSlow(t *testing.T, rawURL, head string) *slowConn {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "%sHost: %s\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{", head, u.Host)
	require.NoError(t, err)
	s := &slowConn{conn: conn, begin: time.Now(), cut: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				break
			}
		}
		s.took = time.Since(s.begin)
		close(s.cut)
	}()
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-s.cut:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	return s
}

// requireServedThroughout has another tenant create invoices, one every 100ms for 5s, and
// requires every one answered 201 within 5s.
func requireServedThroughout(t *testing.T, apiURL, secret string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(5 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		req, err := http.NewRequest("POST", apiURL+"/invoices", strings.NewReader(`{"amount": 100, "currency": "USD"}`))
		require.NoError(t, err)
		for k, v := range bearer(secret, uuid.NewString()) {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		require.NoError(t, err, "another tenant's request %d got no answer", n)
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode, "another tenant's request %d", n)
		n++
		time.Sleep(100 * time.Millisecond)
	}
	require.Greater(t, n, 10)
}

// requireCutAtBodyTimeout requires every slow connection closed by the server at its body
// timeout: not before (the bytes kept coming), not much after.
func requireCutAtBodyTimeout(t *testing.T, conns []*slowConn) {
	t.Helper()
	for i, s := range conns {
		select {
		case <-s.cut:
		case <-time.After(time.Until(s.begin.Add(bodyTimeout + 20*time.Second))):
			t.Fatalf("slow connection %d still open %s after it began", i, time.Since(s.begin))
		}
		require.GreaterOrEqual(t, s.took, bodyTimeout-time.Second, "slow connection %d cut early", i)
		require.Less(t, s.took, bodyTimeout+15*time.Second, "slow connection %d cut late", i)
	}
}

// 80 connections trickling their bodies in, more than serve's 64 slots, take none of them:
// another tenant keeps being answered throughout, and the slow connections are cut at the body
// timeout. Unauthenticated against a configured webhook source (a fresh signature timestamp
// passes every check that needs no body), and authenticated with one tenant's API key.
func TestSlowBodiesStarveNoTenant(t *testing.T) {
	t.Parallel()
	for _, attack := range []struct {
		name string
		head func(secret string) string
	}{
		{"unauthenticated, to a configured webhook source", func(string) string {
			sig := worker.SignWebhook(time.Now(), []byte("{}"), []byte("not the source's secret, but a well-formed one"))
			return "POST /webhooks/shop HTTP/1.1\r\nPgsaga-Signature: " + sig + "\r\n"
		}},
		{"authenticated with one tenant's key", func(secret string) string {
			return "POST /invoices HTTP/1.1\r\nAuthorization: Bearer " + secret + "\r\nIdempotency-Key: " + uuid.NewString() + "\r\n"
		}},
	} {
		t.Run(attack.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			p := start(t, []string{"PGSAGA_WEBHOOK_SECRET_SHOP=" + webhookSecret}, true,
				serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
			attacker, victim := apiKey(t, w.db.URL, "t1", "mallory").Secret, apiKey(t, w.db.URL, "t2", "alice").Secret
			// The attacker's key has authenticated before: its requests count as its tenant's.
			status, _, body := httpDo(t, "POST", p.url+"/invoices", bearer(attacker, uuid.NewString()), `{"amount": 1, "currency": "USD"}`)
			require.Equal(t, http.StatusCreated, status, string(body))

			conns := make([]*slowConn, slowBodies)
			for i := range conns {
				conns[i] = openSlow(t, p.url, attack.head(attacker))
			}
			time.Sleep(500 * time.Millisecond) // every slow request is at its body
			requireServedThroughout(t, p.url, victim)
			requireCutAtBodyTimeout(t, conns)
		})
	}
}

// A tenant whose requests are slow to finish (payments waiting on a slow gateway) holds at
// most its share of the slots: beyond it, its requests are answered 429 too_many_requests with
// Retry-After at once, storing nothing, while another tenant's payment goes through.
func TestATenantOverItsShareGets429(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, nil, true, serveArgs(w.db.URL, "--gateway-url", w.simURL, "--log-level", "off")...)
	greedy, other := apiKey(t, w.db.URL, "t1", "mallory").Secret, apiKey(t, w.db.URL, "t2", "alice").Secret
	invoiceOf := func(secret string) string {
		status, _, body := httpDo(t, "POST", p.url+"/invoices", bearer(secret, uuid.NewString()), `{"amount": 100000, "currency": "USD"}`)
		require.Equal(t, http.StatusCreated, status, string(body))
		return jsonString(t, body, "id")
	}
	greedyInvoice, otherInvoice := invoiceOf(greedy), invoiceOf(other)
	_, err := w.sim.SetFaults(func(s *sim.Settings) { s.Latency = 4 * time.Second })
	require.NoError(t, err)

	// More payments at once than the server's 64 slots: without shares they would take them all.
	const attempts = 70
	var (
		wg                sync.WaitGroup
		created, tooMany  atomic.Int32
		refusedKeys       sync.Map
		missingRetryAfter atomic.Int32
	)
	for range attempts {
		wg.Go(func() {
			key := uuid.NewString()
			status, header, body := httpDo(t, "POST", p.url+"/payments", bearer(greedy, key), `{"invoice_id": "`+greedyInvoice+`", "amount": 10}`)
			switch status {
			case http.StatusCreated:
				created.Add(1)
			case http.StatusTooManyRequests:
				tooMany.Add(1)
				refusedKeys.Store(key, true)
				if header.Get("Retry-After") != "1" || jsonString(t, body, "error") != "too_many_requests" {
					missingRetryAfter.Add(1)
				}
			default:
				t.Errorf("the greedy tenant's payment: %d %s", status, body)
			}
		})
	}
	waitUntil(t, 10*time.Second, "the greedy tenant's share of payments to be at the gateway", func() bool { return w.sim.TotalCharges() >= 8 })
	begin := time.Now()
	status, _, body := httpDo(t, "POST", p.url+"/payments", bearer(other, uuid.NewString()), `{"invoice_id": "`+otherInvoice+`", "amount": 10}`)
	require.Equal(t, http.StatusCreated, status, "the other tenant's payment: %s", body)
	require.Less(t, time.Since(begin), 8*time.Second)
	wg.Wait()

	require.Equal(t, int32(8), created.Load(), "half the default pool of 16 connections")
	require.Equal(t, int32(attempts-8), tooMany.Load())
	require.Zero(t, missingRetryAfter.Load(), "every 429 is too_many_requests with Retry-After")
	refusedKeys.Range(func(key, _ any) bool {
		require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key), "nothing stored for a 429")
		return true
	})
	require.Equal(t, 9, w.sim.TotalCharges())
}
