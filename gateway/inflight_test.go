package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// slowNetwork is a simulator over HTTP with inquiry and without keys (so only inquiry can tell,
// and a second send is a second charge) that holds every charge request for hold before
// charging, as a slow network to the provider does. arrived tells when a charge request has
// reached it.
func slowNetwork(t *testing.T, hold time.Duration) (s *sim.Simulator, c *sim.Client, arrived <-chan struct{}) {
	t.Helper()
	off := false
	s = sim.New(&sim.Config{Idempotency: &off, Faults: sim.Faults{LatencyBefore: hold}})
	url, arrived := serveArrivals(t, s)
	c, err := sim.NewClient(url, nil)
	require.NoError(t, err)
	require.Equal(t, hold, c.Capabilities().MaxInFlight, "the simulator reports its in-flight window")
	return s, c, arrived
}

// sendAndGiveUp sends a charge like an execution that loses its lease mid-call: it gives up as
// soon as its request has reached the provider, which charges after its hold.
func sendAndGiveUp(t *testing.T, gw gateway.Gateway, arrived <-chan struct{}, p gateway.ChargeParams) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-arrived
		cancel()
	}()
	_, err := gw.Send(ctx, p)
	require.Equal(t, unknown, gateway.Classify(err), "%v", err)
}

// The zombie's charge lands after the next execution's first, empty inquiry. Execute does not
// trust that answer before the zombie's lease end + MaxInFlight: it waits out the window, finds the zombie's
// charge and sends nothing. The same run that believes the empty answer (a gateway declaring no
// in-flight window) charges a second time: the window is what prevents it.
func TestExecuteZombieLandsAfterEmptyInquiry(t *testing.T) {
	t.Parallel()
	const hold = time.Second
	for name, tc := range map[string]struct {
		trustEmpty bool
		charges    int
	}{
		"window honoured":        {false, 1},
		"empty inquiry believed": {true, 2},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, c, arrived := slowNetwork(t, hold)
			gw := trace(c)
			if tc.trustEmpty {
				gw.caps = &gateway.Capabilities{Inquiry: true}
			}
			p := params("payment:zombie-"+name[:6], 100)
			sendAndGiveUp(t, c, arrived, p)
			var j gatewaytest.Journal
			j.Add(crashed(time.Now())) // the zombie's lease ended: it sends nothing more

			charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
			require.NoError(t, err)
			require.Equal(t, gateway.StatusSucceeded, charge.Status)
			require.Equal(t, "inquire", gw.list()[0])
			require.Eventually(t, func() bool { return s.ChargesFor(p.Reference) == tc.charges }, 5*time.Second, 10*time.Millisecond)
			if !tc.trustEmpty {
				require.NotContains(t, gw.list(), "charge")
				require.Equal(t, succeeded, j.Outcomes()[1])
				require.Equal(t, charge.ID, j.Calls()[1].ProviderID, "the zombie's charge")
			}
		})
	}
}

// When the window does not fit in the call's deadline, the attempt sends nothing, records
// failed_before and says how long to wait.
func TestExecuteInFlightWindowDefers(t *testing.T) {
	t.Parallel()
	const hold = 2 * time.Second
	s, c, arrived := slowNetwork(t, hold)
	gw := trace(c)
	p := params("payment:zombie-defer", 100)
	sendAndGiveUp(t, c, arrived, p)
	var j gatewaytest.Journal
	j.Add(crashed(time.Now()))

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	charge, err := gateway.Execute(ctx, &j, gw, p, fast(5))
	require.Nil(t, charge)
	require.ErrorIs(t, err, gateway.ErrInFlight)
	after, ok := phases.RetryDelay(err)
	require.True(t, ok)
	require.Greater(t, after, time.Second)
	require.LessOrEqual(t, after, hold)
	require.Equal(t, failedBefore, gateway.Classify(err), "this attempt sent nothing")
	require.Equal(t, []string{"inquire"}, gw.list())
	require.Equal(t, failedBefore, j.Outcomes()[1])

	// The journal still says an earlier attempt may have reached: the next attempt asks again.
	require.Eventually(t, func() bool { return s.ChargesFor(p.Reference) == 1 }, 5*time.Second, 10*time.Millisecond)
	charge, err = gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.NotContains(t, gw.list(), "charge")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

// The same rule inside one Execute: its own send times out while the request is on its way;
// the window is measured from when that send stopped.
func TestExecuteOwnTimeoutWaitsOutWindow(t *testing.T) {
	t.Parallel()
	const hold = time.Second
	off := false
	s := sim.New(&sim.Config{Idempotency: &off, Faults: sim.Faults{LatencyBefore: hold}})
	url, arrived := serveArrivals(t, s)
	c, err := sim.NewClient(url, &sim.ClientOpts{HTTPClient: &http.Client{Transport: giveUpOnArrival{arrived}}})
	require.NoError(t, err)
	gw := trace(c)
	p := params("payment:own-timeout", 100)
	var j gatewaytest.Journal

	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, []string{"inquire", "charge", "inquire", "inquire"}, gw.list(), "asked again after the window")
	require.Equal(t, 1, s.ChargesFor(p.Reference))
	require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
}

// A proxy's 502 after the simulator charged is not "certainly not charged":
// only the simulator's explicit not_processed answer is.
func TestExecuteProxy502AfterChargeIsResolvedNotResent(t *testing.T) {
	t.Parallel()
	s := newSim(false, true) // no keys: a second send is a second charge
	upstream := s.Handler()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			upstream.ServeHTTP(w, r)
			return
		}
		upstream.ServeHTTP(httptest.NewRecorder(), r) // the charge is made, its answer dropped
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>502 Bad Gateway</html>")
	}))
	t.Cleanup(proxy.Close)
	c, err := sim.NewClient(proxy.URL, nil)
	require.NoError(t, err)
	p := params("payment:proxied", 100)

	gw := trace(c)
	var j gatewaytest.Journal
	charge, err := gateway.Execute(ctxFor(t), &j, gw, p, fast(5))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, []string{"inquire", "charge", "inquire"}, gw.list())
	require.Equal(t, []phases.CallOutcome{succeeded}, j.Outcomes())
	require.Equal(t, 1, s.ChargesFor(p.Reference), "one charge, never a second after a 502")
}
