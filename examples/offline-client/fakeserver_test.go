package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer emulates the idempotency contract of POST /payments closely
// enough to test the client end to end: keys scoped to (tenant, actor), a
// fingerprint check (422), 409 request_in_progress while the first request
// runs, byte-identical replays with Idempotent-Replayed, stored 404/422
// business outcomes, and a counter of effects per key.
//
// The effect is committed after delay, whether or not the client is still
// there: a client killed while it waits has lost the response, not the
// payment.
type fakeServer struct {
	*httptest.Server
	delay time.Duration
	// failFirst makes the first request of every key answer 503 without
	// doing anything.
	failFirst bool
	// arrivals receives one value per request received, if not nil.
	arrivals chan struct{}

	mu      sync.Mutex
	keys    map[string]*fakeKey
	balance map[string]int64 // invoice -> outstanding amount
	effects map[string]int   // idempotency key -> payments made
	order   []string         // invoice of each first execution, in order
	replays int
	stop    chan struct{} // closed at cleanup: work in progress ends now
}

type fakeKey struct {
	fingerprint string
	done        bool
	status      int
	body        []byte
	seen        int  // executions started
	failedOnce  bool // failFirst already answered 503
}

// fakeOpts configure a fakeServer; they are fixed before it serves.
type fakeOpts struct {
	delay     time.Duration
	invoices  map[string]int64 // invoice -> amount
	failFirst bool
	arrivals  chan struct{}
}

func newFakeServer(t *testing.T, opts fakeOpts) *fakeServer {
	t.Helper()
	balance := map[string]int64{}
	for id, amount := range opts.invoices {
		balance[id] = amount
	}
	s := &fakeServer{
		delay:     opts.delay,
		failFirst: opts.failFirst,
		arrivals:  opts.arrivals,
		keys:      map[string]*fakeKey{},
		balance:   balance,
		effects:   map[string]int{},
		stop:      make(chan struct{}),
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.stop) }) // before Close, which waits for handlers
	return s
}

func writeProblem(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q,"message":"fake server says %s"}`, code, code)
}

func (s *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if s.arrivals != nil {
		s.arrivals <- struct{}{}
	}
	tenant, actor := r.Header.Get("X-Tenant-ID"), r.Header.Get("X-Actor-ID")
	if tenant == "" || actor == "" {
		writeProblem(w, 401, "unauthenticated")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if strings.HasPrefix(key, `"`) && strings.HasSuffix(key, `"`) && len(key) >= 2 {
		key = key[1 : len(key)-1]
	}
	if len(key) < 8 {
		writeProblem(w, 400, "idempotency_key_invalid")
		return
	}
	var req struct {
		InvoiceID string `json:"invoice_id"`
		Amount    int64  `json:"amount"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeProblem(w, 400, "invalid_json")
		return
	}

	scoped := tenant + "\x00" + actor + "\x00" + key
	fingerprint := r.Method + " " + r.URL.Path + " " + string(body)
	s.mu.Lock()
	k, exists := s.keys[scoped]
	switch {
	case !exists:
		k = &fakeKey{fingerprint: fingerprint}
		s.keys[scoped] = k
	case k.fingerprint != fingerprint:
		s.mu.Unlock()
		writeProblem(w, 422, "idempotency_key_reused")
		return
	case k.done:
		s.replays++
		status, stored := k.status, k.body
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(status)
		_, _ = w.Write(stored)
		return
	case k.seen > 0: // claimed and running
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeProblem(w, 409, "request_in_progress")
		return
	}
	if s.failFirst && !k.failedOnce {
		k.failedOnce = true
		s.mu.Unlock()
		writeProblem(w, 503, "temporarily_unavailable")
		return
	}
	k.seen++
	s.mu.Unlock()

	// The work; the client may be killed meanwhile.
	select {
	case <-time.After(s.delay):
	case <-s.stop:
	}

	s.mu.Lock()
	outstanding, known := s.balance[req.InvoiceID]
	switch {
	case !known:
		k.status, k.body = 404, []byte(`{"error":"not_found","message":"no such invoice"}`)
	case req.Amount > outstanding:
		k.status, k.body = 422, []byte(`{"error":"amount_exceeds_balance","message":"too much"}`)
	default:
		s.balance[req.InvoiceID] -= req.Amount
		s.effects[key]++
		s.order = append(s.order, req.InvoiceID)
		k.status = 201
		k.body = fmt.Appendf(nil, `{"id":"pay_%d","invoice_id":%q,"amount":%d,"status":"succeeded","charge_id":"ch_%d"}`,
			len(s.order), req.InvoiceID, req.Amount, len(s.order))
	}
	k.done = true
	status, stored := k.status, k.body
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(stored)
}

// Effects returns the number of payments made per idempotency key.
func (s *fakeServer) Effects() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.effects))
	for k, v := range s.effects {
		out[k] = v
	}
	return out
}

// Order returns the invoices of the payments made, in order.
func (s *fakeServer) Order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

func (s *fakeServer) Replays() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replays
}
