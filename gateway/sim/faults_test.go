package sim_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// post sends a raw request and returns the status and body; err is the transport's.
func post(t *testing.T, url, body string, header map[string]string) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw, nil
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

func chargeParams(ref string, amount int64) gateway.ChargeParams {
	return gateway.ChargeParams{Amount: amount, Currency: "USD", Reference: ref, IdempotencyKey: ref}
}

func TestFailBefore(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{FailBefore: 1}})
	srv := newServer(t, s)

	status, body, err := post(t, srv.URL+"/charges", `{"amount":100,"currency":"USD","reference":"payment:1"}`, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, status)
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, "not_processed", e.Error, "the explicit marker that nothing was charged")

	c, err := sim.NewClient(srv.URL, nil)
	require.NoError(t, err)
	charge, err := c.Send(context.Background(), chargeParams("payment:1", 100))
	require.Nil(t, charge)
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Charges.Classify(charge, err))

	_, err = s.Gateway().Send(context.Background(), chargeParams("payment:1", 100))
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(err))
	require.Zero(t, s.TotalCharges(), "fail-before must charge nothing")
}

func TestLoseResponse(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{LoseResponse: 1}})
	srv := newServer(t, s)

	_, _, err := post(t, srv.URL+"/charges", `{"amount":100,"currency":"USD","reference":"payment:raw"}`, nil)
	require.Error(t, err, "the connection must close with no answer")
	require.Equal(t, 1, s.ChargesFor("payment:raw"), "the charge exists although its answer was lost")

	c, err := sim.NewClient(srv.URL, nil)
	require.NoError(t, err)
	charge, err := c.Send(context.Background(), chargeParams("payment:http", 100))
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err))
	require.ErrorContains(t, err, "gateway: outcome unknown", "the adapter says so (gateway.Unknown)")
	require.Nil(t, charge)
	require.Equal(t, 1, s.ChargesFor("payment:http"))

	_, err = s.Gateway().Send(context.Background(), chargeParams("payment:inproc", 100))
	require.ErrorContains(t, err, "gateway: outcome unknown", "in-process too")
	require.Equal(t, 1, s.ChargesFor("payment:inproc"))
}

func TestLoseNextThenReplay(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	c := newClient(t, s)
	s.LoseNext(1)
	p := chargeParams("payment:lose-next", 100)
	_, err := c.Send(context.Background(), p)
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err))
	charge, err := c.Send(context.Background(), p)
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.Equal(t, 1, s.ChargesFor(p.Reference))
}

func TestLatencyHappensAfterCharging(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{Latency: 300 * time.Millisecond}})
	c := newClient(t, s)

	start := time.Now()
	charge, err := c.Send(context.Background(), chargeParams("payment:slow", 100))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)

	// A client that gives up while waiting has already been charged.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Send(ctx, chargeParams("payment:gave-up", 100))
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(err))
	require.Equal(t, 1, s.ChargesFor("payment:gave-up"))
}

func TestDeclineOver(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{Faults: sim.Faults{DeclineOver: 1000}})
	srv := newServer(t, s)

	status, body, err := post(t, srv.URL+"/charges", `{"amount":1001,"currency":"USD","reference":"payment:big"}`, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	var declined gateway.Charge
	require.NoError(t, json.Unmarshal(body, &declined))
	require.Equal(t, gateway.StatusDeclined, declined.Status)

	charge, err := s.Gateway().Send(context.Background(), chargeParams("payment:edge", 1000))
	require.NoError(t, err)
	require.Equal(t, gateway.StatusSucceeded, charge.Status, "only amounts above the limit decline")
	require.Equal(t, 2, s.TotalCharges(), "a decline is a charge in the ledger")
}

func TestIdempotencyOn(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	srv := newServer(t, s)
	key := map[string]string{"Idempotency-Key": "payment:same"}
	body := `{"amount":100,"currency":"USD","reference":"payment:same"}`

	status1, body1, err := post(t, srv.URL+"/charges", body, key)
	require.NoError(t, err)
	status2, body2, err := post(t, srv.URL+"/charges", body, key)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status1)
	require.Equal(t, status1, status2)
	require.Equal(t, string(body1), string(body2))
	require.Equal(t, 1, s.ChargesFor("payment:same"))

	status, body3, err := post(t, srv.URL+"/charges", `{"amount":999,"currency":"USD","reference":"payment:same"}`, key)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, status, "a key reused for another request is refused")
	require.Contains(t, string(body3), "idempotency_key_reused")
	require.Equal(t, 1, s.ChargesFor("payment:same"))
}

func TestIdempotencyOff(t *testing.T) {
	t.Parallel()
	off := false
	s := sim.New(&sim.Config{Idempotency: &off})
	srv := newServer(t, s)
	key := map[string]string{"Idempotency-Key": "payment:twice"}
	body := `{"amount":100,"currency":"USD","reference":"payment:twice"}`
	for range 2 {
		status, _, err := post(t, srv.URL+"/charges", body, key)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status)
	}
	require.Equal(t, 2, s.ChargesFor("payment:twice"), "without idempotency the same key charges twice")

	for range 2 {
		_, err := s.Gateway().Send(context.Background(), chargeParams("payment:inproc", 100))
		require.NoError(t, err)
	}
	require.Equal(t, 2, s.ChargesFor("payment:inproc"))
}

func TestInquiryOff(t *testing.T) {
	t.Parallel()
	off := false
	s := sim.New(&sim.Config{Inquiry: &off})
	srv := newServer(t, s)

	status, body := get(t, srv.URL+"/charges?reference=payment:1")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, string(body), `"error"`)

	c, err := sim.NewClient(srv.URL, nil)
	require.NoError(t, err)
	require.False(t, c.Capabilities().Inquiry)
	_, err = c.Inquire(context.Background(), "payment:1")
	require.ErrorIs(t, err, gateway.ErrUnsupported)
	_, err = s.Gateway().Inquire(context.Background(), "payment:1")
	require.ErrorIs(t, err, gateway.ErrUnsupported)
}

func TestInquiryOn(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	srv := newServer(t, s)
	status, body := get(t, srv.URL+"/charges?reference=payment:none")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"charges":[]}`, string(body))
}

func TestFaultsEndpoint(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	srv := newServer(t, s)
	c, err := sim.NewClient(srv.URL, nil)
	require.NoError(t, err)
	require.Equal(t, gateway.Capabilities{IdempotencyKeys: true, Inquiry: true, RequestTimeout: sim.DefaultRequestTimeout}, c.Capabilities())

	status, body, err := post(t, srv.URL+"/_sim/faults", `{"fail_before":1,"latency_ms":5,"latency_jitter_ms":2,"idempotency":false}`, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"latency_ms":5,"latency_jitter_ms":2,"latency_before_ms":0,"fail_before":1,"lose_response":0,"decline_over":0,"idempotency":false,"inquiry":true,"pending":0,"pending_ms":2000}`, string(body))
	require.Equal(t, sim.Settings{Idempotency: false, Inquiry: true, Faults: sim.Faults{Latency: 5 * time.Millisecond, LatencyJitter: 2 * time.Millisecond, FailBefore: 1}, PendingFor: 2 * time.Second}, s.Settings())

	status, body = get(t, srv.URL+"/_sim/info")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"idempotency":false,"inquiry":true,"max_in_flight_ms":0}`, string(body))
	require.NoError(t, c.Refresh(context.Background()))
	require.Equal(t, gateway.Capabilities{Inquiry: true, RequestTimeout: sim.DefaultRequestTimeout}, c.Capabilities())

	status, body, err = post(t, srv.URL+"/_sim/faults", `{"latency_before_ms":300,"pending":0.5,"pending_ms":750}`, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, string(body))
	st := s.Settings()
	require.Equal(t, 300*time.Millisecond, st.LatencyBefore)
	require.Equal(t, 0.5, st.Pending)
	require.Equal(t, 750*time.Millisecond, st.PendingFor)
	status, body = get(t, srv.URL+"/_sim/info")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"idempotency":false,"inquiry":true,"max_in_flight_ms":302}`, string(body), "the hold plus its jitter")
	require.Equal(t, gateway.Capabilities{Inquiry: true, MaxInFlight: 302 * time.Millisecond, RequestTimeout: sim.DefaultRequestTimeout}, c.Capabilities())
	_, err = s.SetFaults(func(st *sim.Settings) { st.LatencyBefore, st.Pending = 0, 0 })
	require.NoError(t, err)

	_, err = c.Send(context.Background(), chargeParams("payment:f", 100))
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(err))

	for _, bad := range []string{`{"fail_before":2}`, `{"lose_response":-1}`, `{"latency_ms":-5}`, `{"latency_before_ms":-1}`,
		`{"pending":1.5}`, `{"pending_ms":-1}`, `{"nope":1}`, `not json`} {
		status, body, err := post(t, srv.URL+"/_sim/faults", bad, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, bad)
		require.Contains(t, string(body), `"error"`)
	}
	require.Equal(t, float64(1), s.Settings().FailBefore, "a refused update changes nothing")
}

func TestLedger(t *testing.T) {
	t.Parallel()
	off := false
	s := sim.New(&sim.Config{Idempotency: &off, Faults: sim.Faults{DeclineOver: 500}})
	srv := newServer(t, s)
	gw := s.Gateway()
	for _, p := range []gateway.ChargeParams{chargeParams("payment:a", 100), chargeParams("payment:a", 100), chargeParams("payment:b", 900)} {
		_, err := gw.Send(context.Background(), p)
		require.NoError(t, err)
	}
	status, body := get(t, srv.URL+"/_sim/ledger")
	require.Equal(t, http.StatusOK, status)
	var ledger sim.Ledger
	require.NoError(t, json.Unmarshal(body, &ledger))
	require.Len(t, ledger.Charges, 3)
	require.Equal(t, map[string]int{"payment:a": 2, "payment:b": 1}, ledger.ByReference)
	require.Equal(t, gateway.StatusDeclined, ledger.Charges[2].Status)
	require.Equal(t, s.Ledger(), ledger)

	status, body = get(t, newServer(t, sim.New(nil)).URL+"/_sim/ledger")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"charges":[],"by_reference":{}}`, string(body))
}

func TestBadChargeBodies(t *testing.T) {
	t.Parallel()
	srv := newServer(t, sim.New(nil))
	for name, body := range map[string]string{
		"not json":      `{"amount":`,
		"unknown field": `{"amount":1,"currency":"USD","reference":"r","x":1}`,
		"wrong type":    `{"amount":"1","currency":"USD","reference":"r"}`,
		"zero amount":   `{"amount":0,"currency":"USD","reference":"r"}`,
		"no currency":   `{"amount":1,"reference":"r"}`,
		"no reference":  `{"amount":1,"currency":"USD"}`,
		"trailing data": `{"amount":1,"currency":"USD","reference":"r"} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, raw, err := post(t, srv.URL+"/charges", body, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, status)
			var e struct{ Error, Message string }
			require.NoError(t, json.Unmarshal(raw, &e))
			require.NotEmpty(t, e.Error)
		})
	}
}

func TestClientClassifiesRefusedConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	_, err = sim.NewClient("http://"+addr, nil)
	require.Error(t, err, "capabilities cannot be learnt from a closed port")

	c, err := sim.NewClient("http://"+addr, &sim.ClientOpts{Capabilities: &gateway.Capabilities{IdempotencyKeys: true}})
	require.NoError(t, err)
	_, err = c.Send(context.Background(), chargeParams("payment:refused", 100))
	require.Equal(t, phases.CallOutcomeFailedBefore, gateway.Classify(err), "%v", err)
}

func TestNewClientRejectsBadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:9090", "ftp://x", "http://"} {
		_, err := sim.NewClient(u, nil)
		require.Error(t, err, u)
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := sim.New(&sim.Config{Faults: sim.Faults{Latency: time.Minute}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()

	c, err := sim.NewClient("http://"+ln.Addr().String(), nil)
	require.NoError(t, err)
	charged := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), chargeParams("payment:inflight", 100))
		charged <- err
	}()
	require.Eventually(t, func() bool { return s.ChargesFor("payment:inflight") == 1 }, 5*time.Second, 5*time.Millisecond)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop after cancel")
	}
	require.Equal(t, phases.CallOutcomeUnknown, gateway.Classify(<-charged), "the in-flight charge's answer is lost")
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed")
}

// A charge refused as invalid is answered over Serve (400 invalid_request), as one that charges
// is: a refusal is not held, nor is its answer cut by the server's write deadline.
func TestServeAnswersInvalidCharges(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = sim.New(nil).Serve(ctx, ln) }()
	for _, body := range []string{`{"amount": 0, "currency": "USD", "reference": "r"}`, `{"amount": 1, "currency": "", "reference": "r"}`} {
		status, answer, err := post(t, "http://"+ln.Addr().String()+"/charges", body, nil)
		require.NoError(t, err, body)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, string(answer), `"error":"invalid_request"`)
	}
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	err := sim.ListenAndServe(context.Background(), "127.0.0.1:0", &sim.Config{Faults: sim.Faults{FailBefore: 3}})
	require.ErrorContains(t, err, "fail-before")

	err = sim.ListenAndServe(context.Background(), "256.0.0.1:bad", nil)
	require.Error(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, sim.ListenAndServe(ctx, "127.0.0.1:0", nil), "a cancelled context stops it cleanly")
}

func TestNewPanicsOnInvalidConfig(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { sim.New(&sim.Config{Faults: sim.Faults{LoseResponse: 1.5}}) })
	require.NoError(t, (*sim.Config)(nil).Validate())
	err := (&sim.Config{Faults: sim.Faults{FailBefore: -1, DeclineOver: -1, Pending: 2, LatencyBefore: -1}, PendingFor: -1}).Validate()
	require.ErrorContains(t, err, "fail-before")
	require.ErrorContains(t, err, "decline-over")
	require.ErrorContains(t, err, "pending must")
	require.ErrorContains(t, err, "pending-for")
	require.ErrorContains(t, err, "latency-before")
}

// Serve caps request headers at 64 KiB (431), as pgsaga's own servers do, and still answers a
// charge held by a latency fault.
func TestServeLimits(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := sim.New(&sim.Config{Faults: sim.Faults{Latency: 50 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	req, err := http.NewRequest("GET", base+"/_sim/info", nil)
	require.NoError(t, err)
	req.Header.Set("X-Padding", strings.Repeat("a", 128<<10))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)

	c, err := sim.NewClient(base, nil)
	require.NoError(t, err)
	ch, err := c.Send(context.Background(), chargeParams("payment:slow", 100))
	require.NoError(t, err)
	require.Equal(t, "succeeded", string(ch.Status))
}
