package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/effectsim"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/gateway/webhook/webhooksim"
	"github.com/pgsaga/pgsaga/phases"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var fast = &gateway.ExecuteOpts{RetryDelay: func(int) time.Duration { return time.Millisecond }}

func delivery(key string) webhook.Params {
	return webhook.Params{Key: key, Body: json.RawMessage(`{"event":"order.submitted","order_id":"ord_1"}`)}
}

// serve serves h over loopback for the test's lifetime and counts the POSTs it receives.
func serve(t *testing.T, h http.Handler) (url string, posts func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

func newClient(t *testing.T, url string, cfg *webhook.Config) *webhook.Client {
	t.Helper()
	var c webhook.Config
	if cfg != nil {
		c = *cfg
	}
	c.URL = url
	client, err := webhook.New(&c)
	require.NoError(t, err)
	return client
}

// partnerClient is a client on a new simulated partner configured by cfg.
func partnerClient(t *testing.T, cfg *webhooksim.Config, client *webhook.Config) (*webhook.Client, *webhooksim.Partner) {
	t.Helper()
	p := webhooksim.New(cfg)
	url, _ := serve(t, p)
	return newClient(t, url, client), p
}

// The client, against the simulated partner over HTTP, passes the suite every adapter passes.
func TestConformance(t *testing.T) {
	t.Parallel()
	client, partner := partnerClient(t, nil, nil)
	gatewaytest.RunEffect(t, func(*testing.T) webhook.Partner { return client }, &gatewaytest.EffectOpts[webhook.Params, webhook.Delivery]{
		NewParams:  delivery,
		Invalid:    func(key string) webhook.Params { return webhook.Params{Key: key, Body: json.RawMessage(`{not json`)} },
		NoReadBack: true,
		Count:      partner.Count,
		Slow: func(t *testing.T) webhook.Partner {
			c, _ := partnerClient(t, &webhooksim.Config{Faults: effectsim.Faults{Latency: time.Minute}}, nil)
			return c
		},
		Lossy: func(t *testing.T) (webhook.Partner, func(string) int) {
			c, p := partnerClient(t, nil, nil)
			p.LoseNext(1)
			return c, p.Count
		},
		Hanging: func(t *testing.T) (webhook.Partner, func(string) int) {
			c, p := partnerClient(t, nil, &webhook.Config{RequestTimeout: 200 * time.Millisecond})
			p.HangNext(1)
			return c, p.Count
		},
	})
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	client := newClient(t, "http://127.0.0.1:1/hooks", nil)
	require.Equal(t, gateway.Capabilities{IdempotencyKeys: true, KeyRetention: 24 * time.Hour, RequestTimeout: 5 * time.Second}, client.Capabilities())
}

// The partner takes the delivery and the answer is lost: Deliver sends the same key again, the
// partner answers with the first delivery, and it has taken one.
func TestLostAnswerDeliversOnce(t *testing.T) {
	t.Parallel()
	partner := webhooksim.New(nil)
	url, posts := serve(t, partner)
	client := newClient(t, url, nil)
	partner.LoseNext(1)
	p := delivery(gateway.DeriveKey("order", "lost-answer"))
	var j gatewaytest.Journal

	d, err := webhook.Deliver(ctxFor(t), &j, client, p, fast)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, d.Status)
	require.Equal(t, "dlv_000001", d.ID)
	require.Equal(t, 2, posts(), "the same key, sent again")
	require.Equal(t, 1, partner.Count(p.Key), "one delivery per key")
	require.JSONEq(t, string(p.Body), string(partner.Records()[0].Body))
	require.Equal(t, []phases.CallOutcome{phases.CallOutcomeSucceeded}, j.Outcomes())
}

// An execution that died after sending leaves a journal row without an outcome; the next one
// sends the key again and the partner answers with the delivery it took.
func TestResumeAfterCrashDeliversOnce(t *testing.T) {
	t.Parallel()
	client, partner := partnerClient(t, nil, nil)
	p := delivery(gateway.DeriveKey("order", "crashed"))
	first, err := client.Send(ctxFor(t), p) // the attempt before the crash
	require.NoError(t, err)
	var j gatewaytest.Journal
	now := time.Now()
	j.Add(phases.CallRecord{StartedAt: now, Deadline: now})

	d, err := webhook.Deliver(ctxFor(t), &j, client, p, fast)
	require.NoError(t, err)
	require.Equal(t, first, d)
	require.Equal(t, 1, partner.Count(p.Key))
}

// A delivery held on its way (latency before it lands) whose sender gave up, and the key sent
// again meanwhile: both land, the partner takes one.
func TestZombieAndResendDeliverOnce(t *testing.T) {
	t.Parallel()
	client, partner := partnerClient(t, &webhooksim.Config{Faults: effectsim.Faults{LatencyBefore: 300 * time.Millisecond}}, nil)
	p := delivery(gateway.DeriveKey("order", "zombie"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := client.Send(ctx, p)
	cancel()
	require.Equal(t, phases.CallOutcomeUnknown, webhook.Kind.Classify(nil, err), "%v", err)
	var j gatewaytest.Journal
	now := time.Now()
	j.Add(phases.CallRecord{StartedAt: now, Deadline: now})

	d, err := webhook.Deliver(ctxFor(t), &j, client, p, fast)
	require.NoError(t, err)
	require.Equal(t, "dlv_000001", d.ID, "answered with the zombie's delivery")
	require.Equal(t, 1, partner.Count(p.Key))
}

// A key sent again with another body is not refused as permanent (the first delivery was
// taken): it is unknown, and never taken for the intent's.
func TestKeyReusedWithAnotherBodyIsUnknown(t *testing.T) {
	t.Parallel()
	client, partner := partnerClient(t, nil, nil)
	key := gateway.DeriveKey("order", "reused")
	_, err := client.Send(ctxFor(t), delivery(key))
	require.NoError(t, err)
	_, err = client.Send(ctxFor(t), webhook.Params{Key: key, Body: json.RawMessage(`{"event":"other"}`)})
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err))
	require.ErrorContains(t, err, "gateway: outcome unknown", "the adapter says so (gateway.Unknown)")
	require.Equal(t, 1, partner.Count(key))
}

// Every answer a partner may give is placed by behaviour.
func TestClassification(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]phases.CallOutcome{
		http.StatusOK:                  phases.CallOutcomeSucceeded,
		http.StatusAccepted:            phases.CallOutcomeSucceeded,
		http.StatusNoContent:           phases.CallOutcomeSucceeded,
		http.StatusTooManyRequests:     phases.CallOutcomeFailedBefore,
		http.StatusRequestTimeout:      phases.CallOutcomeFailedBefore,
		http.StatusConflict:            phases.CallOutcomeUnknown,
		http.StatusInternalServerError: phases.CallOutcomeUnknown,
		http.StatusBadGateway:          phases.CallOutcomeUnknown,
		http.StatusServiceUnavailable:  phases.CallOutcomeUnknown,
		http.StatusBadRequest:          phases.CallOutcomeFailedBefore,
		http.StatusUnauthorized:        phases.CallOutcomeFailedBefore,
		http.StatusUnprocessableEntity: phases.CallOutcomeFailedBefore,
	} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
			d, err := newClient(t, url, nil).Send(ctxFor(t), delivery("k"))
			require.Equal(t, want, webhook.Kind.Classify(d, err), "%v", err)
			switch want {
			case phases.CallOutcomeSucceeded:
				require.Equal(t, "k", d.ID, "a partner that gives no id: the key")
			case phases.CallOutcomeFailedBefore:
				require.Equal(t, status == http.StatusTooManyRequests || status == http.StatusRequestTimeout, phases.IsRetryable(err))
			}
		})
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	d, err := newClient(t, refused, nil).Send(ctxFor(t), delivery("k"))
	require.Equal(t, phases.CallOutcomeFailedBefore, webhook.Kind.Classify(d, err), "%v", err)
}

func TestDeliveryCarriesTheKeyAndHeaders(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 1)
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		_, _ = w.Write([]byte(`{"id":"evt_1"}`))
	}))
	client := newClient(t, url, &webhook.Config{Header: http.Header{"Authorization": {"Bearer s3cret"}}})
	d, err := client.Send(ctxFor(t), delivery("ref_abc"))
	require.NoError(t, err)
	require.Equal(t, "evt_1", d.ID)
	h := <-got
	require.Equal(t, "ref_abc", h.Get("Idempotency-Key"))
	require.Equal(t, "application/json", h.Get("Content-Type"))
	require.Equal(t, "Bearer s3cret", h.Get("Authorization"))
}

func TestConfigNamesTheField(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg  webhook.Config
		want string
	}{
		"no url":        {webhook.Config{}, "URL is required"},
		"bad url":       {webhook.Config{URL: "partner.example/hooks"}, "must be http(s)"},
		"timeout":       {webhook.Config{URL: "https://partner.example", RequestTimeout: -1}, "RequestTimeout must be >= 0"},
		"key retention": {webhook.Config{URL: "https://partner.example", KeyRetention: -1}, "KeyRetention must be >= 0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := webhook.New(&tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
