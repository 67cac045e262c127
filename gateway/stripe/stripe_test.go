package stripe_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/stripe"
	"github.com/pgsaga/pgsaga/phases"
)

const testKey = "sk_test_123"

func newGateway(t *testing.T, backendURL string) *stripe.Gateway {
	t.Helper()
	gw, err := stripe.New(&stripe.Config{APIKey: testKey, BackendURL: backendURL})
	require.NoError(t, err)
	return gw
}

func params(ref string, amount int64) gateway.ChargeParams {
	return gateway.ChargeParams{Amount: amount, Currency: "USD", Reference: ref, IdempotencyKey: ref}
}

// --- against stripe-mock -------------------------------------------------------------

func TestConformanceStripeMock(t *testing.T) {
	t.Parallel()
	base := stripeMockURL(t)
	gatewaytest.Run(t, func(t *testing.T) gateway.Gateway { return newGateway(t, base) }, &gatewaytest.Opts{
		// stripe-mock is stateless: it accepts keys but answers every request afresh.
		Stateless: true,
	})
}

func TestChargeStripeMock(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, stripeMockURL(t))
	require.Equal(t, gateway.Capabilities{IdempotencyKeys: true, KeyRetention: 24 * time.Hour}, gw.Capabilities())

	charge, err := gw.Charge(context.Background(), params("payment:stripe-mock", 2000))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(charge.ID, "ch_"), charge.ID)
	require.Equal(t, int64(2000), charge.Amount)
	require.Equal(t, "USD", charge.Currency)
	require.Equal(t, "payment:stripe-mock", charge.Reference)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
}

func TestExecuteStripeMock(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, stripeMockURL(t))
	var j gatewaytest.Journal
	j.Add(phases.CallRecord{StartedAt: time.Now().Add(-time.Hour)})
	charge, err := gateway.Execute(context.Background(), &j, gw, params("payment:execute", 500), nil)
	require.NoError(t, err)
	require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)

	var old gatewaytest.Journal
	old.Add(phases.CallRecord{StartedAt: time.Now().Add(-25 * time.Hour)})
	_, err = gateway.Execute(context.Background(), &old, gw, params("payment:old", 500), nil)
	require.ErrorIs(t, err, gateway.ErrKeyExpired)
	require.True(t, phases.IsOutcomeUnknown(err))
}

// --- against a stub speaking Stripe's wire format, for answers stripe-mock never gives ---

// stub answers every request with status and body and records what it received.
type stub struct {
	requests atomic.Int32
	key      atomic.Value // string: last Idempotency-Key
	form     atomic.Value // url.Values: last form body
}

func newStub(t *testing.T, status int, body string) (*stub, string) {
	t.Helper()
	s := &stub{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		raw, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(raw))
		s.form.Store(form)
		s.key.Store(r.Header.Get("Idempotency-Key"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_stub")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

const chargeBody = `{"id":"ch_stub","object":"charge","amount":700,"currency":"usd","status":"%s","paid":true,"metadata":{"reference":"payment:stub"}}`

func TestChargeSendsKeyAndReference(t *testing.T) {
	t.Parallel()
	s, base := newStub(t, http.StatusOK, strings.Replace(chargeBody, "%s", "succeeded", 1))
	charge, err := newGateway(t, base).Charge(context.Background(), params("payment:stub", 700))
	require.NoError(t, err)
	require.Equal(t, &gateway.Charge{ID: "ch_stub", Amount: 700, Currency: "USD", Reference: "payment:stub", Status: gateway.ChargeStatusSucceeded}, charge)
	require.Equal(t, "payment:stub", s.key.Load())
	form := s.form.Load().(url.Values)
	require.Equal(t, "payment:stub", form.Get("metadata[reference]"))
	require.Equal(t, "700", form.Get("amount"))
	require.Equal(t, "usd", form.Get("currency"))
	require.Equal(t, "tok_visa", form.Get("source"))
}

func TestChargeClassification(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status int
		body   string
		want   phases.CallOutcome
	}{
		"card declined": {http.StatusPaymentRequired,
			`{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline","message":"Your card was declined.","charge":"ch_declined"}}`,
			phases.CallOutcomeDeclined},
		"failed status":   {http.StatusOK, strings.Replace(chargeBody, "%s", "failed", 1), phases.CallOutcomeDeclined},
		"pending status":  {http.StatusOK, strings.Replace(chargeBody, "%s", "pending", 1), phases.CallOutcomePending},
		"unknown status":  {http.StatusOK, strings.Replace(chargeBody, "%s", "refunded", 1), phases.CallOutcomeUnknown},
		"server error":    {http.StatusInternalServerError, `{"error":{"type":"api_error","message":"boom"}}`, phases.CallOutcomeUnknown},
		"bad gateway":     {http.StatusBadGateway, `<html>bad gateway</html>`, phases.CallOutcomeUnknown},
		"rate limited":    {http.StatusTooManyRequests, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"slow down"}}`, phases.CallOutcomeFailedBefore},
		"lock timeout":    {http.StatusTooManyRequests, `{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"locked"}}`, phases.CallOutcomeFailedBefore},
		"key in flight":   {http.StatusConflict, `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use","message":"in use"}}`, phases.CallOutcomeUnknown},
		"key reused":      {http.StatusBadRequest, `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters"}}`, phases.CallOutcomeFailedBefore},
		"invalid request": {http.StatusBadRequest, `{"error":{"type":"invalid_request_error","param":"amount","message":"bad amount"}}`, phases.CallOutcomeFailedBefore},
		"unauthorized":    {http.StatusUnauthorized, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`, phases.CallOutcomeFailedBefore},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, base := newStub(t, tc.status, tc.body)
			charge, err := newGateway(t, base).Charge(context.Background(), params("payment:stub", 700))
			require.Equal(t, tc.want, gateway.Classify(charge, err), "%v", err)
			if tc.want == phases.CallOutcomeUnknown && tc.status != http.StatusOK {
				// An unknown outcome is read back by reference (the stub answers the search with
				// the same error, so it stays unknown).
				require.Equal(t, int32(2), s.requests.Load())
			} else {
				require.Equal(t, int32(1), s.requests.Load(), "the SDK must not retry on its own")
			}
			switch tc.want {
			case phases.CallOutcomeDeclined:
				require.NoError(t, err)
				require.Equal(t, "payment:stub", charge.Reference)
			case phases.CallOutcomeFailedBefore:
				if tc.status != http.StatusTooManyRequests {
					require.False(t, phases.IsRetryable(err), "a refused request is permanent")
				}
			}
		})
	}
}

func TestCardDeclineKeepsChargeID(t *testing.T) {
	t.Parallel()
	_, base := newStub(t, http.StatusPaymentRequired,
		`{"error":{"type":"card_error","code":"card_declined","message":"Your card was declined.","charge":"ch_declined"}}`)
	charge, err := newGateway(t, base).Charge(context.Background(), params("payment:declined", 900))
	require.NoError(t, err)
	require.Equal(t, &gateway.Charge{ID: "ch_declined", Amount: 900, Currency: "USD", Reference: "payment:declined", Status: gateway.ChargeStatusDeclined}, charge)
}

func TestChargeTransportFailures(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = newGateway(t, closed).Charge(context.Background(), params("payment:refused", 100))
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(nil, err), "%v", err)

	// A provider that never answers: the deadline ends the call, which may have charged.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = newGateway(t, hang.URL).Charge(ctx, params("payment:hang", 100))
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(nil, err), "%v", err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

func TestInquireUnsupported(t *testing.T) {
	t.Parallel()
	_, err := newGateway(t, "http://127.0.0.1:1").Inquire(context.Background(), "payment:x")
	require.ErrorIs(t, err, gateway.ErrUnsupported)
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := stripe.New(nil)
	require.ErrorContains(t, err, "APIKey")
	_, err = stripe.New(&stripe.Config{APIKey: testKey, KeyRetention: -time.Second})
	require.ErrorContains(t, err, "KeyRetention")
	gw, err := stripe.New(&stripe.Config{APIKey: testKey, KeyRetention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, time.Hour, gw.Capabilities().KeyRetention)
}
