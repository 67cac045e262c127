package sim_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// Only the simulator's explicit not_processed answer says nothing was charged; any other 5xx
// (a proxy in front of it, a crash after charging) may follow a charge.
func TestClientClassifiesAnswers(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		status int
		body   string
		want   phases.CallOutcome
	}{
		"not processed":         {503, `{"error":"not_processed","message":"busy"}`, phases.CallOutcomeFailedBefore},
		"503 without marker":    {503, `{"error":"unavailable","message":"busy"}`, phases.CallOutcomeUnknown},
		"proxy 502":             {502, `<html>Bad Gateway</html>`, phases.CallOutcomeUnknown},
		"proxy 504":             {504, ``, phases.CallOutcomeUnknown},
		"500":                   {500, `{"error":"internal"}`, phases.CallOutcomeUnknown},
		"marker on another 5xx": {500, `{"error":"not_processed"}`, phases.CallOutcomeUnknown},
		"invalid":               {400, `{"error":"invalid_request","message":"amount"}`, phases.CallOutcomeFailedBefore},
		// The first request under the key reached the provider and may have charged.
		"key reused":     {422, `{"error":"idempotency_key_reused"}`, phases.CallOutcomeUnknown},
		"unreadable 201": {201, `{"id":`, phases.CallOutcomeUnknown},
		"unknown status": {201, `{"id":"ch_1","amount":1,"currency":"USD","reference":"r","status":"processing"}`, phases.CallOutcomeUnknown},
		"pending":        {201, `{"id":"ch_1","amount":1,"currency":"USD","reference":"r","status":"pending"}`, phases.CallOutcomePending},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c, err := sim.NewClient(srv.URL, &sim.ClientOpts{Capabilities: &gateway.Capabilities{IdempotencyKeys: true}})
			require.NoError(t, err)
			charge, err := c.Send(context.Background(), chargeParams("r", 1))
			require.Equal(t, tc.want, gateway.Charges.Classify(charge, err), "%v", err)
			if tc.want == phases.CallOutcomeFailedBefore && tc.status < 500 {
				require.False(t, phases.IsRetryable(err), "a refused request is permanent")
			}
		})
	}
}

// A key reused with other parameters means a request under that key reached the provider: the
// in-process gateway says unknown too, never a refusal that would let the engine compensate.
func TestInProcessKeyReusedIsUnknown(t *testing.T) {
	t.Parallel()
	gw := sim.New(nil).Gateway()
	p := gateway.ChargeParams{Amount: 100, Currency: "USD", Reference: "payment:reused", IdempotencyKey: "payment:reused"}
	_, err := gw.Send(context.Background(), p)
	require.NoError(t, err)
	p.Amount = 200
	_, err = gw.Send(context.Background(), p)
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err), "%v", err)
}
