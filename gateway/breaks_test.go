package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// Issue 9, break 3: an outcome nothing can resolve must park without compensating.
func TestBreakUnresolvableIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	_, err := gateway.Execute(context.Background(), newSim(false, false).Gateway(), params("payment:blind", 100), &gateway.ExecuteOpts{MayHaveReached: true})
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.True(t, phases.IsOutcomeUnknown(err), "money may have moved: %v", err)

	s := newSim(true, false)
	gw := withCaps{s.Gateway(), gateway.Capabilities{IdempotencyKeys: true, KeyRetention: time.Hour}}
	_, err = gateway.Execute(context.Background(), gw, params("payment:old", 100), &gateway.ExecuteOpts{MayHaveReached: true, KeyCreatedAt: time.Now().Add(-2 * time.Hour)})
	require.ErrorIs(t, err, gateway.ErrKeyExpired)
	require.True(t, phases.IsOutcomeUnknown(err), "money may have moved: %v", err)
}

// Issue 9, break 4: a status other than succeeded or declined is not a decline.
func TestBreakClassifyOtherStatusIsNotDeclined(t *testing.T) {
	t.Parallel()
	for _, status := range []gateway.ChargeStatus{"pending", "processing", "", "refunded"} {
		require.NotEqual(t, gateway.OutcomeDeclined, gateway.Classify(&gateway.Charge{Status: status}, nil), status)
	}
}

// pendingProvider holds one pending charge for every reference and counts charges sent.
type pendingProvider struct {
	sent atomic.Int32
}

func (p *pendingProvider) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{Inquiry: true}
}

func (p *pendingProvider) Charge(_ context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	p.sent.Add(1)
	return &gateway.Charge{ID: "ch_new", Amount: params.Amount, Currency: params.Currency, Reference: params.Reference, Status: gateway.ChargeStatusSucceeded}, nil
}

func (p *pendingProvider) Inquire(_ context.Context, reference string) ([]gateway.Charge, error) {
	return []gateway.Charge{{ID: "ch_pending", Amount: 100, Currency: "USD", Reference: reference, Status: "pending"}}, nil
}

// Issue 9, break 4: a pending charge found by inquiry is a charge; another one is a double charge.
func TestBreakPendingFoundByInquiryIsNotChargedAgain(t *testing.T) {
	t.Parallel()
	p := &pendingProvider{}
	_, _ = gateway.Execute(context.Background(), p, params("payment:pending", 100), &gateway.ExecuteOpts{MayHaveReached: true})
	require.Zero(t, p.sent.Load(), "a pending charge must never be sent again")
}

// Issue 9, break 11: a proxy's 502 after the simulator charged is not "certainly not charged".
func TestBreakProxy502AfterChargeIsNotRetriedBlindly(t *testing.T) {
	t.Parallel()
	s := newSim(false, true) // no keys: only inquiry can tell
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
	_, _ = gateway.Execute(context.Background(), c, p, nil)
	require.Equal(t, 1, s.ChargesFor(p.Reference), "one charge, never a second after a 502")
}
