package stripe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
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
	return newGatewayWith(t, &stripe.Config{BackendURL: backendURL})
}

func newGatewayWith(t *testing.T, cfg *stripe.Config) *stripe.Gateway {
	t.Helper()
	c := *cfg
	c.APIKey = testKey
	gw, err := stripe.New(&c)
	require.NoError(t, err)
	return gw
}

func params(ref string, amount int64) gateway.ChargeParams {
	return gateway.ChargeParams{Amount: amount, Currency: "USD", Reference: ref, IdempotencyKey: ref}
}

// --- against stripe-mock: every request checked against Stripe's OpenAPI description --------

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
	base := stripeMockURL(t)
	for name, cfg := range map[string]*stripe.Config{
		"defaults":    {BackendURL: base},
		"off session": {BackendURL: base, Customer: "cus_123", OffSession: true, StatementDescriptorSuffix: "ORDER"},
	} {
		gw := newGatewayWith(t, cfg)
		require.Equal(t, gateway.Capabilities{IdempotencyKeys: true, KeyRetention: 24 * time.Hour, RequestTimeout: 10 * time.Second}, gw.Capabilities())

		charge, err := gw.Send(context.Background(), params("payment:stripe-mock", 2000))
		require.NoError(t, err, name)
		require.True(t, strings.HasPrefix(charge.ID, "pi_"), charge.ID)
		require.Equal(t, int64(2000), charge.Amount)
		require.Equal(t, "USD", charge.Currency)
		require.Equal(t, "payment:stripe-mock", charge.Reference)
		require.Equal(t, gateway.StatusSucceeded, charge.Status)
		require.False(t, charge.CreatedAt.IsZero(), "created is read")
	}
}

func TestGetStripeMock(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, stripeMockURL(t))
	charge, err := gw.Get(context.Background(), "pi_123")
	require.NoError(t, err)
	require.Equal(t, "pi_123", charge.ID)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)

	charge, err = gw.Get(context.Background(), "ch_123")
	require.NoError(t, err, "a Charges API id is read from the Charges API")
	require.Equal(t, "ch_123", charge.ID)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
}

func TestExecuteStripeMock(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, stripeMockURL(t))
	var j gatewaytest.Journal
	j.Add(phases.CallRecord{StartedAt: time.Now().Add(-time.Hour)})
	charge, err := gateway.Execute(context.Background(), &j, gw, params("payment:execute", 500), nil)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)

	var old gatewaytest.Journal
	old.Add(phases.CallRecord{StartedAt: time.Now().Add(-25 * time.Hour)})
	_, err = gateway.Execute(context.Background(), &old, gw, params("payment:old", 500), nil)
	require.ErrorIs(t, err, gateway.ErrCannotResolve)
	require.ErrorContains(t, err, "key retention window")
	require.True(t, phases.IsOutcomeUnknown(err))
}

// The list requests (created filters, limit, both cursors) are ones Stripe's API description
// accepts. stripe-mock answers each with its one canned PaymentIntent, created in 2009.
func TestListChargesStripeMock(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, stripeMockURL(t))
	got := listAll(t, gw, time.Time{})
	require.Len(t, got, 1, "the canned PaymentIntent, once")
	require.Equal(t, gateway.StatusSucceeded, got[0].Status)
	require.Equal(t, time.Date(2009, 2, 13, 23, 31, 30, 0, time.UTC), got[0].CreatedAt)

	require.Empty(t, listAll(t, gw, time.Now().Add(-time.Hour)), "the canned PaymentIntent is older")
}

// After an unknown outcome the adapter searches by reference: the search is one Stripe's API
// description accepts. A proxy answers the creation with a 500 and passes the rest to stripe-mock.
func TestSearchAfterUnknownStripeMock(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(stripeMockURL(t))
	require.NoError(t, err)
	var mu sync.Mutex
	var searches []int
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path == "/v1/payment_intents/search" {
			mu.Lock()
			searches = append(searches, resp.StatusCode)
			mu.Unlock()
		}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents" {
			writeAnswer(w, apiError(500, "api_error", "", "An unknown error occurred", "", nil))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	charge, err := newGateway(t, srv.URL).Send(context.Background(), params("payment:it's-searched", 700))
	require.Nil(t, charge)
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Charges.Classify(charge, err), "%v", err)
	require.ErrorContains(t, err, "no PaymentIntent listed", "the canned PaymentIntent carries no reference")
	require.Equal(t, []int{http.StatusOK}, searches, "stripe-mock accepted the search")
}

func listAll(t *testing.T, l gateway.Lister, since time.Time) []gateway.Charge {
	t.Helper()
	var out []gateway.Charge
	for c, err := range l.ListCharges(context.Background(), since) {
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
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

// intentBody is a PaymentIntent answer with the given status.
func intentBody(status string) string {
	return fmt.Sprintf(`{"id":"pi_stub","object":"payment_intent","amount":700,"currency":"usd","status":%q,"created":1767225600,"metadata":{"reference":"payment:stub"}}`, status)
}

func TestChargeSendsOneConfirmedPaymentIntent(t *testing.T) {
	t.Parallel()
	s, base := newStub(t, http.StatusOK, intentBody("succeeded"))
	charge, err := newGateway(t, base).Send(context.Background(), params("payment:stub", 700))
	require.NoError(t, err)
	require.Equal(t, &gateway.Charge{ID: "pi_stub", Amount: 700, Currency: "USD", Reference: "payment:stub",
		Status: gateway.StatusSucceeded, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, charge)
	require.Equal(t, "payment:stub", s.key.Load())
	require.Equal(t, url.Values{
		"amount":                             {"700"},
		"currency":                           {"usd"},
		"confirm":                            {"true"},
		"payment_method":                     {"pm_card_visa"},
		"automatic_payment_methods[enabled]": {"true"},
		"automatic_payment_methods[allow_redirects]": {"never"},
		"error_on_requires_action":                   {"true"},
		"description":                                {"payment:stub"},
		"metadata[reference]":                        {"payment:stub"},
	}, s.form.Load().(url.Values))

	s, base = newStub(t, http.StatusOK, intentBody("succeeded"))
	_, err = newGatewayWith(t, &stripe.Config{BackendURL: base, PaymentMethod: "pm_saved", Customer: "cus_1",
		OffSession: true, StatementDescriptorSuffix: "ORDER 7"}).Send(context.Background(), params("payment:stub", 700))
	require.NoError(t, err)
	form := s.form.Load().(url.Values)
	require.Equal(t, "pm_saved", form.Get("payment_method"))
	require.Equal(t, "cus_1", form.Get("customer"))
	require.Equal(t, "true", form.Get("off_session"))
	require.False(t, form.Has("error_on_requires_action"), "off_session already fails what needs the customer")
	require.Equal(t, "ORDER 7", form.Get("statement_descriptor_suffix"))
}

// Every PaymentIntent status is one class (the package documentation says why).
func TestPaymentIntentStatuses(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]phases.CallOutcome{
		"succeeded":               phases.CallOutcomeSucceeded,
		"processing":              phases.CallOutcomePending,
		"requires_action":         phases.CallOutcomePending,
		"requires_confirmation":   phases.CallOutcomePending,
		"requires_capture":        phases.CallOutcomePending,
		"requires_payment_method": phases.CallOutcomeDeclined,
		"canceled":                phases.CallOutcomeDeclined,
		"on_hold_forever":         phases.CallOutcomeUnknown,
	} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			_, base := newStub(t, http.StatusOK, intentBody(status))
			gw := newGateway(t, base)
			charge, err := gw.Send(context.Background(), params("payment:stub", 700))
			require.Equal(t, want, gateway.Charges.Classify(charge, err), "Charge: %v", err)
			got, err := gw.Get(context.Background(), "pi_stub")
			require.Equal(t, want, gateway.Charges.Classify(got, err), "Get: %v", err)
			if want == phases.CallOutcomeUnknown {
				require.Nil(t, charge)
				require.ErrorContains(t, err, status)
			}
		})
	}
}

func TestChargeClassification(t *testing.T) {
	t.Parallel()
	declinedIntent := strings.Replace(intentBody("requires_payment_method"), `"pi_stub"`, `"pi_declined"`, 1)
	for name, tc := range map[string]struct {
		status int
		body   string
		want   phases.CallOutcome
	}{
		"card declined": {http.StatusPaymentRequired,
			`{"error":{"type":"card_error","code":"card_declined","decline_code":"generic_decline","message":"Your card was declined.","payment_intent":` + declinedIntent + `}}`,
			phases.CallOutcomeDeclined},
		"authentication required": {http.StatusPaymentRequired,
			`{"error":{"type":"card_error","code":"authentication_required","decline_code":"authentication_required","message":"Your card was declined. This transaction requires authentication.","payment_intent":` + declinedIntent + `}}`,
			phases.CallOutcomeDeclined},
		"server error":    {http.StatusInternalServerError, `{"error":{"type":"api_error","message":"boom"}}`, phases.CallOutcomeUnknown},
		"bad gateway":     {http.StatusBadGateway, `<html>bad gateway</html>`, phases.CallOutcomeUnknown},
		"rate limited":    {http.StatusTooManyRequests, `{"error":{"type":"invalid_request_error","code":"rate_limit","message":"slow down"}}`, phases.CallOutcomeFailedBefore},
		"lock timeout":    {http.StatusTooManyRequests, `{"error":{"type":"invalid_request_error","code":"lock_timeout","message":"locked"}}`, phases.CallOutcomeFailedBefore},
		"key in flight":   {http.StatusConflict, `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use","message":"in use"}}`, phases.CallOutcomeUnknown},
		"key reused":      {http.StatusBadRequest, `{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}}`, phases.CallOutcomeUnknown},
		"invalid request": {http.StatusBadRequest, `{"error":{"type":"invalid_request_error","param":"amount","message":"bad amount"}}`, phases.CallOutcomeFailedBefore},
		"unauthorized":    {http.StatusUnauthorized, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`, phases.CallOutcomeFailedBefore},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, base := newStub(t, tc.status, tc.body)
			charge, err := newGateway(t, base).Send(context.Background(), params("payment:stub", 700))
			require.Equal(t, tc.want, gateway.Charges.Classify(charge, err), "%v", err)
			if tc.want == phases.CallOutcomeUnknown {
				// An unknown outcome is read back by reference (the stub answers the search with
				// the same error, so it stays unknown).
				require.Equal(t, int32(2), s.requests.Load())
			} else {
				require.Equal(t, int32(1), s.requests.Load(), "the SDK must not retry on its own")
			}
			switch tc.want {
			case phases.CallOutcomeDeclined:
				require.NoError(t, err)
				require.Equal(t, &gateway.Charge{ID: "pi_declined", Amount: 700, Currency: "USD", Reference: "payment:stub",
					Status: gateway.StatusDeclined, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, charge,
					"the declined PaymentIntent, stored and replayed")
			case phases.CallOutcomeFailedBefore:
				if tc.status != http.StatusTooManyRequests {
					require.False(t, phases.IsRetryable(err), "a refused request is permanent")
				}
			}
		})
	}
}

// A card error without a PaymentIntent (a charge id only) is still a decline.
func TestCardDeclineWithoutPaymentIntent(t *testing.T) {
	t.Parallel()
	_, base := newStub(t, http.StatusPaymentRequired,
		`{"error":{"type":"card_error","code":"card_declined","message":"Your card was declined.","charge":"ch_declined"}}`)
	charge, err := newGateway(t, base).Send(context.Background(), params("payment:declined", 900))
	require.NoError(t, err)
	require.Equal(t, &gateway.Charge{ID: "ch_declined", Amount: 900, Currency: "USD", Reference: "payment:declined", Status: gateway.StatusDeclined}, charge)
}

func TestChargeTransportFailures(t *testing.T) {
	t.Parallel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = newGateway(t, closed).Send(context.Background(), params("payment:refused", 100))
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(err), "%v", err)

	// A provider that never answers: the deadline ends the call, which may have charged.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = newGateway(t, hang.URL).Send(ctx, params("payment:hang", 100))
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err), "%v", err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

func TestGetClassification(t *testing.T) {
	t.Parallel()
	_, base := newStub(t, http.StatusNotFound, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent"}}`)
	_, err := newGateway(t, base).Get(context.Background(), "pi_missing")
	require.ErrorIs(t, err, gateway.ErrNotFound)

	_, base = newStub(t, http.StatusInternalServerError, `{"error":{"type":"api_error","message":"boom"}}`)
	_, err = newGateway(t, base).Get(context.Background(), "pi_1")
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(err), "a read changes nothing: %v", err)
	require.True(t, phases.IsRetryable(err))
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
