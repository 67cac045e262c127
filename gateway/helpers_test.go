package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// traced records every call made through a gateway, in order, and can override what it
// declares.
type traced struct {
	gateway.Gateway
	// caps, when set, replaces the gateway's own capabilities.
	caps *gateway.Capabilities

	mu    sync.Mutex
	calls []string
}

func trace(gw gateway.Gateway) *traced { return &traced{Gateway: gw} }

func (g *traced) add(call string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, call)
}

// list returns the calls so far: "charge", "inquire", "get".
func (g *traced) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string{}, g.calls...)
}

func (g *traced) Capabilities() gateway.Capabilities {
	if g.caps != nil {
		return *g.caps
	}
	return g.Gateway.Capabilities()
}

func (g *traced) Send(ctx context.Context, p gateway.ChargeParams) (*gateway.Charge, error) {
	g.add("charge")
	return g.Gateway.Send(ctx, p)
}

func (g *traced) Inquire(ctx context.Context, reference string) ([]gateway.Charge, error) {
	g.add("inquire")
	return g.Gateway.Inquire(ctx, reference)
}

func (g *traced) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	g.add("get")
	return g.Gateway.Get(ctx, id)
}

// fast returns Execute options with immediate retries (at most retries of them).
func fast(retries int) *gateway.ExecuteOpts {
	return &gateway.ExecuteOpts{Retries: retries, RetryDelay: func(int) time.Duration { return time.Millisecond }}
}

// polling returns Execute options that read a pending charge every 20ms for up to 10s.
func polling() *gateway.ExecuteOpts {
	return &gateway.ExecuteOpts{Retries: 500, RetryDelay: func(int) time.Duration { return 20 * time.Millisecond }}
}

func params(ref string, amount int64) gateway.ChargeParams {
	return gateway.ChargeParams{Amount: amount, Currency: "USD", Reference: ref, IdempotencyKey: ref}
}

func newSim(idempotency, inquiry bool) *sim.Simulator {
	return sim.New(&sim.Config{Idempotency: &idempotency, Inquiry: &inquiry})
}

// overHTTP returns a client adapter on s served over a loopback listener.
func overHTTP(t *testing.T, s *sim.Simulator) *sim.Client {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := sim.NewClient(srv.URL, nil)
	require.NoError(t, err)
	return c
}

// serveArrivals serves s over a loopback listener and returns its URL and a channel told each
// time a charge request has fully reached the server (before the simulator holds or charges it).
func serveArrivals(t *testing.T, s *sim.Simulator) (string, <-chan struct{}) {
	t.Helper()
	arrived := make(chan struct{}, 16)
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/charges" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			arrived <- struct{}{}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, arrived
}

// giveUpOnArrival is a transport whose charge requests give up as soon as the server has them:
// the request reached the provider, its answer never comes back.
type giveUpOnArrival struct{ arrived <-chan struct{} }

func (g giveUpOnArrival) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost {
		return http.DefaultTransport.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	go func() {
		select {
		case <-g.arrived:
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, err := http.DefaultTransport.RoundTrip(req.WithContext(ctx))
	if err == nil {
		resp.Body.Close()
		return nil, errors.New("the charge was answered before the test gave up on it")
	}
	return nil, err
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
