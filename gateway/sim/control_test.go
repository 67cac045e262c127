package sim_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

// With a control token, /_sim/* answers 401 unauthenticated without it (a wrong one, another
// scheme) and works with it, while the wire format stays open; the client sends the token with
// its capability reads.
func TestControlToken(t *testing.T) {
	t.Parallel()
	const token = "control-token-0123456789"
	srv := httptest.NewServer(sim.New(&sim.Config{ControlToken: token}).Handler())
	t.Cleanup(srv.Close)
	send := func(method, path, auth, body string) int {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/_sim/info", ""}, {"GET", "/_sim/ledger", ""}, {"POST", "/_sim/faults", `{"fail_before": 1}`},
	} {
		for _, auth := range []string{"", "Bearer wrong", "Basic " + token, "Bearer " + token + "x"} {
			require.Equal(t, http.StatusUnauthorized, send(c.method, c.path, auth, c.body), "%s %s with %q", c.method, c.path, auth)
		}
		require.Equal(t, http.StatusOK, send(c.method, c.path, "Bearer "+token, `{}`), "%s %s", c.method, c.path)
	}
	require.Equal(t, http.StatusCreated, send("POST", "/charges", "", `{"amount":1,"currency":"USD","reference":"r1"}`),
		"the faults were never changed, and the wire format needs no token")

	_, err := sim.NewClient(srv.URL, nil)
	require.Error(t, err, "without the token the client cannot learn the capabilities")
	c, err := sim.NewClient(srv.URL, &sim.ClientOpts{ControlToken: token})
	require.NoError(t, err)
	require.True(t, c.Capabilities().Inquiry)
}
