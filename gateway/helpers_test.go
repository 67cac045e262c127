package gateway_test

import (
	"context"
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

func (g *traced) Charge(ctx context.Context, p gateway.ChargeParams) (*gateway.Charge, error) {
	g.add("charge")
	return g.Gateway.Charge(ctx, p)
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
	return overHTTPWith(t, s, nil)
}

func overHTTPWith(t *testing.T, s *sim.Simulator, opts *sim.ClientOpts) *sim.Client {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := sim.NewClient(srv.URL, opts)
	require.NoError(t, err)
	return c
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
