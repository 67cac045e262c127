package stripe_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

// Issue 9, break 11: Stripe replays a key's first answer forever (a pending charge, a saved
// 500), so re-sending the key can never resolve it: the charge must be read back instead.
func TestBreakStripeReplaysAreReadBack(t *testing.T) {
	t.Parallel()
	succeeded := strings.Replace(chargeBody, "%s", "succeeded", 1)
	for name, tc := range map[string]struct {
		status int
		body   string
	}{
		"pending":      {http.StatusOK, strings.Replace(chargeBody, "%s", "pending", 1)},
		"server error": {http.StatusInternalServerError, `{"error":{"type":"api_error","message":"boom"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch {
				case r.Method == http.MethodPost:
					posts.Add(1)
					w.WriteHeader(tc.status)
					_, _ = io.WriteString(w, tc.body)
				case r.URL.Path == "/v1/charges/search":
					_, _ = io.WriteString(w, `{"object":"search_result","url":"/v1/charges/search","has_more":false,"data":[`+succeeded+`]}`)
				default: // GET /v1/charges/ch_stub: the charge as it stands now
					_, _ = io.WriteString(w, succeeded)
				}
			}))
			t.Cleanup(srv.Close)
			charge, err := gateway.Execute(context.Background(), newGateway(t, srv.URL), params("payment:stub", 700), nil)
			require.NoError(t, err)
			require.Equal(t, gateway.ChargeStatusSucceeded, charge.Status)
			require.Equal(t, int32(1), posts.Load(), "the key must not be sent again")
		})
	}
}
