package sim_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// newServer serves s over a real loopback listener for the test's lifetime.
func newServer(t *testing.T, s *sim.Simulator) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func newClient(t *testing.T, s *sim.Simulator) *sim.Client {
	t.Helper()
	return newClientWith(t, s, nil)
}

func newClientWith(t *testing.T, s *sim.Simulator, opts *sim.ClientOpts) *sim.Client {
	t.Helper()
	c, err := sim.NewClient(newServer(t, s).URL, opts)
	require.NoError(t, err)
	return c
}

// conformance returns the suite's options for simulators reached through adapt: every fault
// the suite can use, each on a simulator of its own with the features cfg sets. adapt declares
// requestTimeout as the gateway's per-request timeout, or its default when zero.
func conformance(cfg sim.Config, adapt func(t *testing.T, s *sim.Simulator, requestTimeout time.Duration) gateway.Gateway) *gatewaytest.Opts {
	with := func(change func(*sim.Config)) *sim.Simulator {
		c := cfg
		change(&c)
		return sim.New(&c)
	}
	return &gatewaytest.Opts{
		Declining: func(t *testing.T) (gateway.Gateway, int64) {
			return adapt(t, with(func(c *sim.Config) { c.DeclineOver = 1000 }), 0), 1001
		},
		Slow: func(t *testing.T) gateway.Gateway {
			return adapt(t, with(func(c *sim.Config) { c.Latency = time.Minute }), 0)
		},
		Pending: func(t *testing.T) (gateway.Gateway, func(string) int) {
			s := with(func(c *sim.Config) { c.PendingFor = 300 * time.Millisecond })
			s.PendingNext(1)
			return adapt(t, s, 0), s.ChargesFor
		},
		Lossy: func(t *testing.T) (gateway.Gateway, func(string) int) {
			s := with(func(*sim.Config) {})
			s.LoseNext(1)
			return adapt(t, s, 0), s.ChargesFor
		},
		Hanging: func(t *testing.T) (gateway.Gateway, func(string) int) {
			const timeout = 200 * time.Millisecond
			s := with(func(c *sim.Config) { c.RequestTimeout = timeout })
			s.HangNext(1)
			return adapt(t, s, timeout), s.ChargesFor
		},
		InFlight: func(t *testing.T, hold time.Duration) (gateway.Gateway, func(string) int) {
			s := with(func(c *sim.Config) { c.LatencyBefore = hold })
			return adapt(t, s, 0), s.ChargesFor
		},
	}
}

// inProcess is s's in-process gateway, whose per-request timeout is s's Config.RequestTimeout.
func inProcess(_ *testing.T, s *sim.Simulator, _ time.Duration) gateway.Gateway { return s.Gateway() }

// overHTTP is a client on s over loopback, declaring requestTimeout (its default when zero).
func overHTTP(t *testing.T, s *sim.Simulator, requestTimeout time.Duration) gateway.Gateway {
	return newClientWith(t, s, &sim.ClientOpts{RequestTimeout: requestTimeout})
}

func TestConformanceInProcess(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	o := conformance(sim.Config{}, inProcess)
	o.ChargesFor = s.ChargesFor
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return s.Gateway() }, o)
}

func TestConformanceInProcessWithoutFeatures(t *testing.T) {
	t.Parallel()
	off := false
	cfg := sim.Config{Idempotency: &off, Inquiry: &off}
	s := sim.New(&cfg)
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return s.Gateway() }, conformance(cfg, inProcess))
}

func TestConformanceInProcessInquiryOnly(t *testing.T) {
	t.Parallel()
	off := false
	cfg := sim.Config{Idempotency: &off}
	s := sim.New(&cfg)
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return s.Gateway() }, conformance(cfg, inProcess))
}

func TestConformanceHTTP(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	c := newClient(t, s)
	o := conformance(sim.Config{}, overHTTP)
	o.ChargesFor = s.ChargesFor
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return c }, o)
}

func TestConformanceHTTPWithoutFeatures(t *testing.T) {
	t.Parallel()
	off := false
	cfg := sim.Config{Idempotency: &off, Inquiry: &off}
	c := newClient(t, sim.New(&cfg))
	require.Equal(t, gateway.Capabilities{RequestTimeout: sim.DefaultRequestTimeout}, c.Capabilities())
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return c }, conformance(cfg, overHTTP))
}

func TestConformanceHTTPKeysOnly(t *testing.T) {
	t.Parallel()
	off := false
	cfg := sim.Config{Inquiry: &off}
	c := newClient(t, sim.New(&cfg))
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return c }, conformance(cfg, overHTTP))
}
