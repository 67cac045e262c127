package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
)

// sleeper records the delays a Client asks for and returns at once,
// advancing a fake clock by each delay.
type sleeper struct {
	mu     sync.Mutex
	now    time.Time
	delays []time.Duration
}

func newSleeper() *sleeper {
	return &sleeper{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays = append(s.delays, d)
	s.now = s.now.Add(d)
	return ctx.Err()
}

func (s *sleeper) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

func (s *sleeper) Delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// newTestClient returns a client for baseURL whose waits are recorded by s
// instead of slept, and whose jitter always picks the top of the range.
func newTestClient(t *testing.T, baseURL string, s *sleeper, cfg *client.Config) *client.Client {
	t.Helper()
	if cfg == nil {
		cfg = &client.Config{}
	}
	cfg.BaseURL = baseURL
	cfg.Sleep = s.Sleep
	cfg.Now = s.Now
	if cfg.RandInt64N == nil {
		cfg.RandInt64N = func(n int64) int64 { return n - 1 }
	}
	c, err := client.NewClient(cfg)
	require.NoError(t, err)
	return c
}

// scriptedServer answers the i-th request with script[i] (the last entry
// repeats) and records every request's Idempotency-Key.
type scriptedServer struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

// reply is one scripted answer; status 0 means drop the connection without
// answering.
type reply struct {
	status int
	body   string
	header map[string]string
}

func newScriptedServer(t *testing.T, script ...reply) *scriptedServer {
	t.Helper()
	s := &scriptedServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.keys)
		s.keys = append(s.keys, r.Header.Get(client.HeaderIdempotencyKey))
		s.mu.Unlock()

		rep := script[min(n, len(script)-1)]
		if rep.status == 0 {
			dropConnection(t, w)
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		_, _ = w.Write([]byte(rep.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// dropConnection closes the connection without writing a response: to the
// client, a network error.
func dropConnection(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	require.NoError(t, err)
	require.NoError(t, conn.Close())
}

func problemBody(code, message string) string {
	b, _ := json.Marshal(map[string]string{"error": code, "message": message})
	return string(b)
}

func newPaymentIntent(t *testing.T, invoice string, amount int) *client.Intent {
	t.Helper()
	intent, err := client.NewIntent(http.MethodPost, "/payments",
		map[string]any{"invoice_id": invoice, "amount": amount},
		&client.IntentOpts{Header: http.Header{"X-Tenant-ID": {"tenant-1"}, "X-Actor-ID": {"actor-1"}}})
	require.NoError(t, err)
	return intent
}
