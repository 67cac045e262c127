package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/worker"
)

// headerTestClient tells the test's proxy which client address it received a request from.
const headerTestClient = "X-Test-Client"

// loopbackProxy is a reverse proxy on loopback in front of target, as a load balancer is: it
// appends the address it received each request from to X-Forwarded-For (the test says which,
// in X-Test-Client, since every test client is on loopback), keeping what the client sent there.
func loopbackProxy(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		hops := append(pr.In.Header.Values("X-Forwarded-For"), pr.In.Header.Get(headerTestClient))
		pr.Out.Header.Set("X-Forwarded-For", strings.Join(hops, ", "))
		pr.Out.Header.Del(headerTestClient)
	}})
	t.Cleanup(proxy.Close)
	return proxy.URL
}

// from are the headers of a request the proxy receives from client, with more header pairs.
func from(client string, more ...string) map[string]string {
	h := map[string]string{headerTestClient: client, "Accept": "application/json"}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = more[i+1]
	}
	return h
}

// Behind a trusted proxy (--trusted-proxies), the console throttles sign-ins per client, the
// address the proxy names: a client that keeps guessing locks out itself, whatever it writes in
// X-Forwarded-For, and another client behind the same proxy signs in. Without the flag every
// client has the proxy's address, and one client's failures lock out the other.
func TestConsoleBehindAProxyLocksOutNoOtherClient(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := pgsaga(t, nil, "operator", "add", "ana", "--json", "--database-url", w.db.URL)
	require.Equal(t, 0, r.code, r.String())
	ana := jsonString(t, []byte(r.stdout), "token")
	const attacker, victim = "203.0.113.7", "198.51.100.9"
	wrong := "Bearer pgso_" + strings.Repeat("x", 43)

	for _, tc := range []struct {
		name    string
		trusted bool
	}{{"with the proxy trusted", true}, {"with no proxy trusted", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"console", "--addr", "127.0.0.1:0", "--insecure-http", "--database-url", w.db.URL, "--gateway-url", w.simURL}
			if tc.trusted {
				args = append(args, "--trusted-proxies", "10.0.0.0/8,127.0.0.1/32")
			}
			p := start(t, nil, true, args...)
			base := loopbackProxy(t, p.url)
			for i := range 10 {
				status, _, body := httpDo(t, "GET", base+"/", from(attacker, "Authorization", wrong), "")
				require.Equal(t, http.StatusUnauthorized, status, "guess %d: %s", i+1, body)
			}
			status, _, body := httpDo(t, "GET", base+"/", from(attacker, "Authorization", wrong), "")
			require.Equal(t, http.StatusTooManyRequests, status, string(body))
			// Naming the victim's address in its own X-Forwarded-For changes nothing: the proxy
			// appends the address it saw, and that is the client.
			status, _, _ = httpDo(t, "GET", base+"/", from(attacker, "Authorization", "Bearer "+ana, "X-Forwarded-For", victim), "")
			require.Equal(t, http.StatusTooManyRequests, status, "the attacker is throttled, a right token included")

			status, _, body = httpDo(t, "GET", base+"/", from(victim, "Authorization", "Bearer "+ana), "")
			if !tc.trusted {
				require.Equal(t, http.StatusTooManyRequests, status, "behind an untrusted proxy, everyone is the proxy: %s", body)
				return
			}
			require.Equal(t, http.StatusOK, status, "another client behind the proxy: %s", body)
			status, _, body = httpDo(t, "POST", base+"/login", from(victim, "Content-Type", "application/x-www-form-urlencoded"),
				url.Values{"token": {ana}}.Encode())
			require.Equal(t, http.StatusOK, status, "the other client signs in with the form: %s", body)

			logs := p.stderr.String()
			require.Equal(t, 10, strings.Count(logs, `surface=console reason=unknown_token client=`+attacker+` via=bearer`), logs)
			require.Equal(t, 2, strings.Count(logs, `surface=console reason=too_many_attempts client=`+attacker+` via=bearer`), logs)
			require.NotContains(t, logs, "client=127.0.0.1", "no refusal is put on the proxy")
			require.NotContains(t, logs, ana)
		})
	}
}

// serve counts every refused authentication in pgsaga_auth_failures_total by surface and reason
// and logs it, at a bounded rate, with the client's address (behind --trusted-proxies, the one
// the proxy names), never the secret; every answer carries X-Request-ID.
func TestServeRecordsRefusedAuthentications(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := start(t, []string{"PGSAGA_WEBHOOK_SECRET_SHOP=" + webhookSecret}, true,
		serveArgs(w.db.URL, "--gateway-url", w.simURL, "--trusted-proxies", "127.0.0.1")...)
	base := loopbackProxy(t, p.url)
	const client = "203.0.113.7"
	guess := "pgs_0123456789abcdef_" + strings.Repeat("A", 43)

	post := func(path string, header map[string]string, body string) (int, http.Header) {
		t.Helper()
		status, h, _ := httpDo(t, "POST", base+path, header, body)
		return status, h
	}
	event := `{"id":"evt_1","type":"t"}`
	status, _ := post("/webhooks/shop", from(client, "Pgsaga-Signature", worker.SignWebhook(time.Now(), []byte(event), []byte("a guess at the secret, long enough"))), event)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = post("/webhooks/elsewhere", from(client), event)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = post("/invoices", from(client, "Idempotency-Key", uuid.NewString()), `{}`)
	require.Equal(t, http.StatusUnauthorized, status)
	const guesses = 100
	for range guesses {
		status, h := post("/invoices", from(client, "Authorization", "Bearer "+guess, "Idempotency-Key", uuid.NewString()), `{}`)
		require.Equal(t, http.StatusUnauthorized, status)
		require.Regexp(t, `^[0-9a-f]{16}$`, h.Get("X-Request-ID"))
	}

	metrics := func() string {
		_, _, body := httpDo(t, "GET", p.ops+"/metrics", nil, "")
		return string(body)
	}
	for series, want := range map[string]int{
		`pgsaga_auth_failures_total{reason="invalid_key",surface="api"}`:                guesses,
		`pgsaga_auth_failures_total{reason="missing_key",surface="api"}`:                1,
		`pgsaga_auth_failures_total{reason="invalid_signature",surface="webhook"}`:      1,
		`pgsaga_auth_failures_total{reason="unknown_webhook_source",surface="webhook"}`: 1,
	} {
		m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\d+)`).FindStringSubmatch(metrics())
		require.NotNil(t, m, "%s in /metrics", series)
		n, _ := strconv.Atoi(m[1])
		require.Equal(t, want, n, series)
	}
	logs := p.stderr.String()
	logged := strings.Count(logs, "authentication refused")
	require.GreaterOrEqual(t, logged, 30, logs)
	require.Less(t, logged, guesses, "logged at a bounded rate: %s", logs)
	require.Contains(t, logs, fmt.Sprintf(`surface=api reason=invalid_key client=%s method=POST path=/invoices`, client))
	require.Contains(t, logs, fmt.Sprintf(`surface=webhook reason=invalid_signature client=%s`, client))
	require.NotContains(t, logs, guess, "never the secret")
	require.NotContains(t, logs, "client=127.0.0.1")
}
