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
	c, err := sim.NewClient(newServer(t, s).URL, nil)
	require.NoError(t, err)
	return c
}

func TestConformanceInProcess(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return s.Gateway() }, &gatewaytest.Opts{
		ChargesFor: s.ChargesFor,
		Declining: func(*testing.T) (gateway.Gateway, int64) {
			return sim.New(&sim.Config{DeclineOver: 1000}).Gateway(), 1001
		},
		Slow: func(*testing.T) gateway.Gateway {
			return sim.New(&sim.Config{Latency: time.Minute}).Gateway()
		},
	})
}

func TestConformanceInProcessWithoutFeatures(t *testing.T) {
	t.Parallel()
	off := false
	s := sim.New(&sim.Config{Idempotency: &off, Inquiry: &off})
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return s.Gateway() }, nil)
}

func TestConformanceHTTP(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	c := newClient(t, s)
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return c }, &gatewaytest.Opts{
		ChargesFor: s.ChargesFor,
		Declining: func(t *testing.T) (gateway.Gateway, int64) {
			return newClient(t, sim.New(&sim.Config{DeclineOver: 1000})), 1001
		},
		Slow: func(t *testing.T) gateway.Gateway {
			return newClient(t, sim.New(&sim.Config{Latency: time.Minute}))
		},
	})
}

func TestConformanceHTTPWithoutFeatures(t *testing.T) {
	t.Parallel()
	off := false
	c := newClient(t, sim.New(&sim.Config{Idempotency: &off, Inquiry: &off}))
	require.Equal(t, gateway.Capabilities{}, c.Capabilities())
	gatewaytest.Run(t, func(*testing.T) gateway.Gateway { return c }, nil)
}
