package main_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGatewaySimMatchesDocument drives `pgsaga gateway-sim` through every operation of
// docs/api/gateway-sim.yaml and each of its error answers.
func TestGatewaySimMatchesDocument(t *testing.T) {
	t.Parallel()
	spec := loadSpec(t, "gateway-sim")
	p := start(t, nil, true, "gateway-sim", "--addr", "127.0.0.1:0")
	c := spec.client(p.url)
	faults := func(body string) apiAnswer {
		t.Helper()
		a := c.do(t, apiCall{Method: "POST", Path: "/_sim/faults", Body: body})
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		return a
	}
	charge := func(key, body string) apiAnswer {
		t.Helper()
		call := apiCall{Method: "POST", Path: "/charges", Body: body}
		if key != "" {
			call.Header = map[string]string{"Idempotency-Key": key}
		}
		return c.do(t, call)
	}
	var first struct {
		ID, Status string
		CreatedAt  time.Time `json:"created_at"`
	}

	t.Run("charge, and the same key again", func(t *testing.T) {
		a := charge("k-1", `{"amount": 500, "currency": "USD", "reference": "r-1"}`)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		require.NoError(t, json.Unmarshal(a.Body, &first))
		require.Equal(t, "succeeded", first.Status)
		again := charge("k-1", `{"amount": 500, "currency": "USD", "reference": "r-1"}`)
		require.Equal(t, http.StatusCreated, again.Status)
		require.Equal(t, string(a.Body), string(again.Body), "the first answer, creating nothing")
		requireError(t, charge("k-1", `{"amount": 501, "currency": "USD", "reference": "r-1"}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
	})

	t.Run("refused charges", func(t *testing.T) {
		a := c.do(t, apiCall{Method: "POST", Path: "/charges", Body: `{"amount": 500, "currency": "USD", "reference": "r-2", "tip": 1}`, Invalid: true})
		requireError(t, a, http.StatusBadRequest, "invalid_json")
		a = c.do(t, apiCall{Method: "POST", Path: "/charges", Body: `{"amount": 0, "currency": "USD", "reference": "r-2"}`, Invalid: true})
		requireError(t, a, http.StatusBadRequest, "invalid_request")
		faults(`{"fail_before": 1}`)
		requireError(t, charge("", `{"amount": 500, "currency": "USD", "reference": "r-2"}`), http.StatusServiceUnavailable, "not_processed")
		faults(`{"fail_before": 0}`)
	})

	t.Run("declined and pending charges", func(t *testing.T) {
		a := faults(`{"decline_over": 1000, "pending": 1, "pending_ms": 200}`)
		require.JSONEq(t, `{"latency_ms":0,"latency_jitter_ms":0,"latency_before_ms":0,"fail_before":0,"lose_response":0,
			"decline_over":1000,"idempotency":true,"inquiry":true,"pending":1,"pending_ms":200}`, string(a.Body))
		a = charge("", `{"amount": 5000, "currency": "USD", "reference": "r-3"}`)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		require.Equal(t, "pending", jsonString(t, a.Body, "status"))
		id := jsonString(t, a.Body, "id")
		waitUntil(t, 10*time.Second, "the pending charge to turn final", func() bool {
			got := c.do(t, apiCall{Method: "GET", Path: "/charges/" + id})
			return got.Status == http.StatusOK && jsonString(t, got.Body, "status") == "declined"
		})
		faults(`{"decline_over": 0, "pending": 0}`)
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/charges/ch_nope"}), http.StatusNotFound, "not_found")
	})

	t.Run("inquiry", func(t *testing.T) {
		a := c.do(t, apiCall{Method: "GET", Path: "/charges?reference=r-1"})
		require.Equal(t, http.StatusOK, a.Status)
		require.Equal(t, 1, len(chargeList(t, a.Body).Charges))
		require.Nil(t, mustField(t, a.Body, "has_more"), "only a list has has_more")
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/charges"}), http.StatusBadRequest, "invalid_request")
		faults(`{"inquiry": false}`)
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/charges?reference=r-1"}), http.StatusNotFound, "inquiry_unsupported")
		faults(`{"inquiry": true}`)
	})

	t.Run("the list of charges, a page at a time", func(t *testing.T) {
		since := url.QueryEscape(first.CreatedAt.Format(time.RFC3339Nano))
		a := c.do(t, apiCall{Method: "GET", Path: "/charges?since=" + since + "&limit=1"})
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		page := chargeList(t, a.Body)
		require.True(t, page.HasMore)
		require.Equal(t, first.ID, page.Charges[0].ID, "oldest first")
		a = c.do(t, apiCall{Method: "GET", Path: "/charges?since=" + since + "&limit=1000&starting_after=" + page.Charges[0].ID})
		page = chargeList(t, a.Body)
		require.False(t, page.HasMore)
		require.Len(t, page.Charges, 1, "the declined charge after the first")
		a = c.do(t, apiCall{Method: "GET", Path: "/charges?since=" + since})
		require.Len(t, chargeList(t, a.Body).Charges, 2, "without limit, every charge at once")

		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/charges?since=yesterday", Invalid: true}), http.StatusBadRequest, "invalid_request")
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/charges?since=" + since + "&limit=0", Invalid: true}), http.StatusBadRequest, "invalid_request")
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/charges?since=" + since + "&starting_after=ch_nope"}), http.StatusBadRequest, "invalid_request")
	})

	t.Run("ledger, info and faults", func(t *testing.T) {
		a := c.do(t, apiCall{Method: "GET", Path: "/_sim/ledger"})
		require.Equal(t, http.StatusOK, a.Status)
		require.JSONEq(t, `{"r-1": 1, "r-3": 1}`, string(mustField(t, a.Body, "by_reference")))
		faults(`{"latency_before_ms": 30}`)
		a = c.do(t, apiCall{Method: "GET", Path: "/_sim/info"})
		require.JSONEq(t, `{"idempotency": true, "inquiry": true, "max_in_flight_ms": 30}`, string(a.Body))
		requireError(t, c.do(t, apiCall{Method: "POST", Path: "/_sim/faults", Body: `{"fail_before": 2}`, Invalid: true}), http.StatusBadRequest, "invalid_request")
		requireError(t, c.do(t, apiCall{Method: "POST", Path: "/_sim/faults", Body: `{"latency": "1s"}`, Invalid: true}), http.StatusBadRequest, "invalid_json")
	})

	t.Run("with a control token", func(t *testing.T) {
		const token = "sim-control-token-0123456789"
		guarded := start(t, []string{"PGSAGA_SIM_CONTROL_TOKEN=" + token}, true, "gateway-sim", "--addr", "127.0.0.1:0")
		gc := spec.client(guarded.url)
		bearer := map[string]string{"Authorization": "Bearer " + token}
		for _, call := range []apiCall{
			{Method: "GET", Path: "/_sim/ledger"}, {Method: "GET", Path: "/_sim/info"},
			{Method: "POST", Path: "/_sim/faults", Body: `{"fail_before": 1}`},
			{Method: "POST", Path: "/_sim/faults", Body: `{"fail_before": 1}`, Header: map[string]string{"Authorization": "Bearer guess"}},
		} {
			requireError(t, gc.do(t, call), http.StatusUnauthorized, "unauthenticated")
		}
		a := gc.do(t, apiCall{Method: "POST", Path: "/charges", Body: `{"amount": 500, "currency": "USD", "reference": "r-9"}`})
		require.Equal(t, http.StatusCreated, a.Status, "the faults are unchanged, and /charges needs no token: %s", a.Body)
		a = gc.do(t, apiCall{Method: "GET", Path: "/_sim/info", Header: bearer})
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		a = gc.do(t, apiCall{Method: "GET", Path: "/_sim/ledger", Header: bearer})
		require.JSONEq(t, `{"r-9": 1}`, string(mustField(t, a.Body, "by_reference")))
		require.Equal(t, 0, guarded.stop(syscall.SIGTERM), guarded.stderr.String())
	})

	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
	spec.requireCovered(nil)
}

type chargePage struct {
	Charges []struct{ ID string }
	HasMore bool `json:"has_more"`
}

func chargeList(t *testing.T, body []byte) chargePage {
	t.Helper()
	var p chargePage
	require.NoError(t, json.Unmarshal(body, &p), string(body))
	require.False(t, strings.Contains(string(body), `"charges":null`), "an empty list is []")
	return p
}
