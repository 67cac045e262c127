package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
)

const created = `{"id":"pay_1","invoice_id":"inv_1","amount":2000,"status":"succeeded","charge_id":"ch_1"}`

func TestSubmitRetriesInProgressThenSucceeds(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t,
		reply{status: 409, body: problemBody("request_in_progress", "still running"), header: map[string]string{"Retry-After": "2"}},
		reply{status: 201, body: created},
	)
	s := newSleeper()
	c := newTestClient(t, srv.URL, s, nil)
	intent := newPaymentIntent(t, "inv_1", 2000)

	res, err := c.Submit(context.Background(), intent)
	require.NoError(t, err)
	require.Equal(t, 201, res.Status)
	require.JSONEq(t, created, string(res.Body))
	require.Equal(t, 2, res.Attempts)
	require.False(t, res.Replayed)
	require.Equal(t, []time.Duration{2 * time.Second}, s.Delays())
	require.Equal(t, []string{`"` + intent.Key + `"`, `"` + intent.Key + `"`}, srv.Keys())
}

func TestSubmitHonoursRetryAfterOn429(t *testing.T) {
	t.Parallel()
	s := newSleeper()
	at := s.Now().Add(7 * time.Second).Format(http.TimeFormat)

	for name, tc := range map[string]struct {
		retryAfter string
		want       time.Duration
	}{
		"seconds":   {retryAfter: "3", want: 3 * time.Second},
		"http date": {retryAfter: at, want: 7 * time.Second},
		"zero":      {retryAfter: "0", want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newScriptedServer(t,
				reply{status: 429, body: problemBody("rate_limited", "slow down"), header: map[string]string{"Retry-After": tc.retryAfter}},
				reply{status: 201, body: created},
			)
			s := newSleeper()
			c := newTestClient(t, srv.URL, s, nil)

			res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
			require.NoError(t, err)
			require.Equal(t, 201, res.Status)
			require.Equal(t, 2, res.Attempts)
			require.Equal(t, []time.Duration{tc.want}, s.Delays())
		})
	}
}

func TestSubmitRetries5xxWithJitteredBackoff(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t,
		reply{status: 503, body: problemBody("temporarily_unavailable", "gateway down")},
		reply{status: 500, body: "oops"},
		reply{status: 502},
		reply{status: 201, body: created},
	)
	s := newSleeper()
	c := newTestClient(t, srv.URL, s, &client.Config{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second})

	res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
	require.NoError(t, err)
	require.Equal(t, 201, res.Status)
	require.Equal(t, 4, res.Attempts)
	// The test's jitter picks the top of each range: base·2ⁿ.
	require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, s.Delays())
}

func TestSubmitRetriesNetworkErrors(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t,
		reply{status: 0}, // connection dropped
		reply{status: 201, body: created},
	)
	s := newSleeper()
	c := newTestClient(t, srv.URL, s, nil)
	intent := newPaymentIntent(t, "inv_1", 2000)

	res, err := c.Submit(context.Background(), intent)
	require.NoError(t, err)
	require.Equal(t, 201, res.Status)
	require.Equal(t, 2, res.Attempts)
	require.Len(t, s.Delays(), 1)
	require.Equal(t, []string{`"` + intent.Key + `"`, `"` + intent.Key + `"`}, srv.Keys())
}

// TestSubmitLostResponseIsReplayed covers the case retries exist for: the
// server did the work but the answer was lost. The retry carries the same key,
// so the server replays instead of acting twice.
func TestSubmitLostResponseIsReplayed(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		effects int
		stored  = map[string]string{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(client.HeaderIdempotencyKey)
		mu.Lock()
		body, done := stored[key]
		if !done {
			effects++
			stored[key] = created
		}
		mu.Unlock()
		if !done {
			dropConnection(t, w) // effect done, answer lost
			return
		}
		w.Header().Set(client.HeaderIdempotentReplayed, "true")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, newSleeper(), nil)

	res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
	require.NoError(t, err)
	require.Equal(t, 201, res.Status)
	require.True(t, res.Replayed)
	require.Equal(t, 2, res.Attempts)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, effects)
}

func TestSubmitNeverRetriesDefinitiveAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		code   string
	}{
		{400, "invalid_request"},
		{400, "idempotency_key_invalid"},
		{401, "unauthenticated"},
		{402, "card_declined"},
		{404, "not_found"},
		{409, "order_already_completed"},
		{413, "request_too_large"},
		{422, "idempotency_key_reused"},
		{422, "amount_exceeds_balance"},
		{418, ""},
	} {
		t.Run(http.StatusText(tc.status)+" "+tc.code, func(t *testing.T) {
			t.Parallel()
			body := problemBody(tc.code, "no")
			if tc.code == "" {
				body = "not json"
			}
			srv := newScriptedServer(t,
				reply{status: tc.status, body: body, header: map[string]string{"Retry-After": "1"}},
				reply{status: 201, body: created},
			)
			s := newSleeper()
			c := newTestClient(t, srv.URL, s, nil)

			res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
			require.ErrorAs(t, err, new(*client.RejectedError))
			require.NotErrorAs(t, err, new(*client.OutcomeUnknownError))
			var rejected *client.RejectedError
			require.ErrorAs(t, err, &rejected)
			require.Equal(t, tc.status, rejected.Status)
			require.Equal(t, tc.code, rejected.Code)
			require.Equal(t, tc.status, res.Status)
			require.Equal(t, body, string(res.Body))
			require.Equal(t, 1, res.Attempts)
			require.Len(t, srv.Keys(), 1)
			require.Empty(t, s.Delays())
		})
	}
}

func TestSubmitOutcomeUnknownAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, reply{status: 503, body: problemBody("temporarily_unavailable", "down")})
	s := newSleeper()
	c := newTestClient(t, srv.URL, s, &client.Config{MaxAttempts: 4})
	intent := newPaymentIntent(t, "inv_1", 2000)

	res, err := c.Submit(context.Background(), intent)
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError))
	require.NotErrorAs(t, err, new(*client.RejectedError))
	var unknown *client.OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, 4, unknown.Attempts)
	require.Equal(t, 503, unknown.LastStatus)
	require.Equal(t, "temporarily_unavailable", unknown.LastCode)
	require.Contains(t, err.Error(), "max attempts reached")
	require.Equal(t, 4, res.Attempts)
	require.Len(t, s.Delays(), 3)
	for _, k := range srv.Keys() {
		require.Equal(t, `"`+intent.Key+`"`, k)
	}
}

func TestSubmitOutcomeUnknownWhenServerUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now

	c := newTestClient(t, url, newSleeper(), &client.Config{MaxAttempts: 3})
	res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError))
	var unknown *client.OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	require.Error(t, unknown.Err, "the transport error is kept")
	require.Zero(t, unknown.LastStatus)
	require.Equal(t, 3, res.Attempts)
	require.Zero(t, res.Status)
}

func TestSubmitOutcomeUnknownAfterMaxElapsed(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, reply{status: 503})
	s := newSleeper()
	// Every delay is 3s (top of the jitter range), the budget 10s: attempts
	// at 0s, 3s, 6s, 9s; the next wait would end at 12s.
	c := newTestClient(t, srv.URL, s, &client.Config{
		MaxAttempts: 100, MaxElapsed: 10 * time.Second, BaseDelay: 3 * time.Second, MaxDelay: 3 * time.Second,
	})

	res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError))
	require.Contains(t, err.Error(), "max elapsed time reached")
	require.Equal(t, 4, res.Attempts)
	require.Len(t, s.Delays(), 3)
}

func TestSubmitRetryAfterBeyondBudgetStops(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t,
		reply{status: 429, header: map[string]string{"Retry-After": "120"}},
		reply{status: 201, body: created},
	)
	s := newSleeper()
	c := newTestClient(t, srv.URL, s, &client.Config{MaxElapsed: 30 * time.Second})

	res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError))
	var unknown *client.OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	require.Equal(t, 429, unknown.LastStatus)
	require.Contains(t, unknown.Reason, "retry after 2m0s")
	require.Equal(t, 1, res.Attempts)
	require.Empty(t, s.Delays())
}

func TestSubmitCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, reply{status: 503})
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.NewClient(&client.Config{
		BaseURL: srv.URL,
		Sleep: func(ctx context.Context, _ time.Duration) error {
			cancel()
			return ctx.Err()
		},
	})
	require.NoError(t, err)

	res, err := c.Submit(ctx, newPaymentIntent(t, "inv_1", 2000))
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError), "the request was sent: it may have happened")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, res.Attempts)
}

func TestSubmitCancelledBeforeSendingIsNotUnknown(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, reply{status: 201})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := newTestClient(t, srv.URL, newSleeper(), nil)

	res, err := c.Submit(ctx, newPaymentIntent(t, "inv_1", 2000))
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorAs(t, err, new(*client.OutcomeUnknownError), "nothing was sent")
	require.Nil(t, res)
	require.Empty(t, srv.Keys())
}

func TestSubmitRequestTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var (
		mu    sync.Mutex
		calls int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hang up
			// Hang until the client gives up on this attempt.
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(201)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	c := newTestClient(t, srv.URL, newSleeper(), &client.Config{RequestTimeout: 50 * time.Millisecond})

	res, err := c.Submit(context.Background(), newPaymentIntent(t, "inv_1", 2000))
	require.NoError(t, err)
	require.Equal(t, 201, res.Status)
	require.Equal(t, 2, res.Attempts)
}

func TestSubmitSendsIntentHeadersAndBody(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, key, tenant, actor, contentType, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Idempotency-Key"), r.Header.Get("X-Tenant-ID"),
			r.Header.Get("X-Actor-ID"), r.Header.Get("Content-Type"), string(body)}
		w.Header().Set(client.HeaderIdempotentReplayed, "true")
		w.WriteHeader(201)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL+"/", newSleeper(), nil)
	intent := newPaymentIntent(t, "inv_9", 1500)

	res, err := c.Submit(context.Background(), intent)
	require.NoError(t, err)
	require.True(t, res.Replayed)
	require.Equal(t, seen{
		method: "POST", path: "/payments", key: `"` + intent.Key + `"`, tenant: "tenant-1", actor: "actor-1",
		contentType: "application/json", body: `{"amount":1500,"invoice_id":"inv_9"}`,
	}, <-got)
}

// Config.Header goes with every request, replacing an intent's header of the same name, and is
// never stored in the intent.
func TestSubmitSendsConfigHeader(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.WriteHeader(201)
	}))
	t.Cleanup(srv.Close)
	c, err := client.NewClient(&client.Config{BaseURL: srv.URL, Header: http.Header{"Authorization": {"Bearer pgs_current"}}})
	require.NoError(t, err)
	intent, err := client.NewIntent("POST", "/payments", map[string]int{"amount": 1},
		&client.IntentOpts{Header: http.Header{"Authorization": {"Bearer pgs_stale"}, "X-Tenant-ID": {"t1"}}})
	require.NoError(t, err)
	_, err = c.Submit(context.Background(), intent)
	require.NoError(t, err)
	h := <-got
	require.Equal(t, []string{"Bearer pgs_current"}, h.Values("Authorization"))
	require.Equal(t, "t1", h.Get("X-Tenant-ID"))
	require.Equal(t, []string{"Bearer pgs_stale"}, intent.Header.Values("Authorization"), "the intent is not changed")

	_, err = client.NewClient(&client.Config{BaseURL: srv.URL, Header: http.Header{"Idempotency-Key": {"x"}}})
	require.ErrorContains(t, err, "Config.Header must not set Idempotency-Key")
}

func TestSubmitRejectsInvalidIntentWithoutSending(t *testing.T) {
	t.Parallel()
	srv := newScriptedServer(t, reply{status: 201})
	c := newTestClient(t, srv.URL, newSleeper(), nil)

	_, err := c.Submit(context.Background(), &client.Intent{Key: "short", Method: "POST", Path: "/payments"})
	require.ErrorIs(t, err, client.ErrInvalidIntent)
	require.Empty(t, srv.Keys())
}

func TestNewClientValidatesConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		config *client.Config
		want   string
	}{
		{"nil", nil, "Config.BaseURL is required"},
		{"relative URL", &client.Config{BaseURL: "/api"}, "Config.BaseURL must be an absolute http or https URL"},
		{"other scheme", &client.Config{BaseURL: "ftp://x"}, "Config.BaseURL must be an absolute http or https URL"},
		{"query", &client.Config{BaseURL: "http://x/?a=b"}, "Config.BaseURL must not have a query"},
		{"attempts", &client.Config{BaseURL: "http://x", MaxAttempts: -1}, "Config.MaxAttempts"},
		{"elapsed", &client.Config{BaseURL: "http://x", MaxElapsed: -1}, "Config.MaxElapsed"},
		{"delays", &client.Config{BaseURL: "http://x", BaseDelay: time.Second, MaxDelay: time.Millisecond}, "Config.MaxDelay"},
		{"timeout", &client.Config{BaseURL: "http://x", RequestTimeout: -1}, "Config.RequestTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := client.NewClient(tc.config)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	cfg := (&client.Config{BaseURL: "http://x", MaxAttempts: 2}).WithDefaults()
	require.Equal(t, 2, cfg.MaxAttempts)
	require.Equal(t, time.Minute, cfg.MaxElapsed)
	require.Equal(t, 300*time.Millisecond, cfg.BaseDelay)
	require.Equal(t, 10*time.Second, cfg.MaxDelay)
	require.Equal(t, 30*time.Second, cfg.RequestTimeout)
	require.NotNil(t, cfg.HTTPClient)
	require.NotNil(t, cfg.Logger)
	require.NotNil(t, cfg.Sleep)
	require.NotNil(t, cfg.Now)
	require.NotNil(t, cfg.RandInt64N)
}

func TestErrorsMatchTheirTypes(t *testing.T) {
	t.Parallel()
	var rejected error = &client.RejectedError{Status: 422, Code: "idempotency_key_reused", Message: "different body"}
	require.ErrorAs(t, rejected, new(*client.RejectedError))
	require.Equal(t, "request rejected with status 422 (idempotency_key_reused): different body", rejected.Error())

	var unknown error = &client.OutcomeUnknownError{Attempts: 3, Reason: "max attempts reached", Err: context.DeadlineExceeded}
	require.ErrorAs(t, unknown, new(*client.OutcomeUnknownError))
	require.ErrorIs(t, unknown, context.DeadlineExceeded)
	require.NotErrorAs(t, unknown, new(*client.RejectedError))

	var retryable interface{ Retryable() bool }
	require.ErrorAs(t, unknown, &retryable)
	require.True(t, retryable.Retryable())
	require.ErrorAs(t, rejected, &retryable)
	require.False(t, retryable.Retryable())
}
