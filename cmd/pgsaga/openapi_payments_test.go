package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/worker"
)

// webhookSecret is the secret of the webhook source "shop" in these tests.
const webhookSecret = "shop-webhook-secret-0123456789"

// TestPaymentsAPIMatchesDocument drives `pgsaga serve` through every operation of
// docs/api/payments.yaml and every answer it documents: successes, replays, requests without a
// valid API key, each refusal of the idempotency checks, the business outcomes, a request in
// flight, an unavailable gateway, a parked key, the webhook receiver, the scope headers of
// --insecure-scope-headers, and, with the database stopped, the 503s; and its operations
// address (/healthz ok, read_only and unavailable, /metrics) through docs/api/ops.yaml.
func TestPaymentsAPIMatchesDocument(t *testing.T) {
	t.Parallel()
	d := newDroppedDB(t)
	spec, ops := loadSpec(t, "payments"), loadSpec(t, "ops")
	p := start(t, []string{"PGSAGA_WEBHOOK_SECRET_SHOP=" + webhookSecret}, true,
		serveArgs(d.url, "--gateway-url", d.simURL, "--log-level", "off")...)
	c, o := spec.client(p.url), ops.client(p.ops)
	alice, bob := bearer(apiKey(t, d.url, "t1", "alice").Secret, ""), bearer(apiKey(t, d.url, "t2", "bob").Secret, "")
	revoked := apiKey(t, d.url, "t1", "alice")
	r := pgsaga(t, nil, "apikey", "revoke", "--database-url", d.url, revoked.ID)
	require.Equal(t, 0, r.code, r.String())
	post := func(as map[string]string, key, path, body string) apiAnswer {
		t.Helper()
		return c.do(t, apiCall{Method: "POST", Path: path, Header: with(as, "Idempotency-Key", key), Body: body})
	}
	get := func(as map[string]string, path string) apiAnswer {
		t.Helper()
		return c.do(t, apiCall{Method: "GET", Path: path, Header: as})
	}
	invoice := func(amount string) string {
		t.Helper()
		a := post(alice, uuid.NewString(), "/invoices", `{"amount": `+amount+`, "currency": "USD"}`)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		return jsonString(t, a.Body, "id")
	}
	setFaults := func(f func(*sim.Settings)) {
		t.Helper()
		_, err := d.sim.SetFaults(f)
		require.NoError(t, err)
	}

	t.Run("an invoice, its replay under either spelling of the key, and its reads", func(t *testing.T) {
		key := uuid.NewString()
		a := post(alice, key, "/invoices", `{"amount": 5000, "currency": "USD"}`)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		require.Empty(t, a.Header.Get("Idempotent-Replayed"))
		for _, spelling := range []string{key, `"` + key + `"`} {
			// Member order, white space and the spelling of a number are the same request.
			r := post(alice, spelling, "/invoices", `{"currency":"USD","amount":5e3}`)
			require.Equal(t, http.StatusCreated, r.Status)
			require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
			require.Equal(t, string(a.Body), string(r.Body), "the stored bytes")
		}
		id := jsonString(t, a.Body, "id")
		r := get(alice, "/invoices/"+id)
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "open", jsonString(t, r.Body, "status"))
		requireError(t, get(bob, "/invoices/"+id), http.StatusNotFound, "not_found")
		requireError(t, get(alice, "/invoices/no%20such%2Fid"), http.StatusNotFound, "not_found")
	})

	t.Run("every route refuses a request without a valid API key, storing nothing", func(t *testing.T) {
		inv := invoice("100")
		for _, call := range []apiCall{
			{Method: "POST", Path: "/invoices", Body: `{"amount": 5000, "currency": "USD"}`},
			{Method: "POST", Path: "/payments", Body: `{"invoice_id": "` + inv + `", "amount": 1}`},
			{Method: "POST", Path: "/orders", Body: `{"total": 1}`},
			{Method: "POST", Path: "/orders/ord_x/complete"},
			{Method: "GET", Path: "/invoices/" + inv},
			{Method: "GET", Path: "/payments?invoice_id=" + inv},
			{Method: "GET", Path: "/sales?order_id=ord_x"},
		} {
			for _, auth := range []string{"", "Bearer not-a-key", "Bearer " + revoked.Secret, "Basic " + revoked.Secret} {
				key := uuid.NewString()
				call.Header, call.Invalid = map[string]string{}, auth == "" || strings.HasPrefix(auth, "Basic")
				if auth != "" {
					call.Header["Authorization"] = auth
				}
				if call.Method == "POST" {
					call.Header["Idempotency-Key"] = key
				}
				requireError(t, c.do(t, call), http.StatusUnauthorized, "unauthenticated")
				require.Zero(t, d.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key))
			}
		}
	})

	t.Run("the idempotency checks refuse in order, storing nothing", func(t *testing.T) {
		body := `{"amount": 5000, "currency": "USD"}`
		requireError(t, c.do(t, apiCall{Method: "POST", Path: "/invoices", Header: alice, Body: body, Invalid: true}),
			http.StatusBadRequest, "idempotency_key_missing")
		for _, bad := range []string{"short", "has space in it", `"unterminated`, `"` + strings.Repeat("k", 256) + `"`} {
			a := c.do(t, apiCall{Method: "POST", Path: "/invoices", Header: with(alice, "Idempotency-Key", bad), Body: body, Invalid: true})
			requireError(t, a, http.StatusBadRequest, "idempotency_key_invalid")
		}
		huge := `{"amount": 5000, "currency": "USD", "invoice_id": "inv_x", "total": 1, "note": "` + strings.Repeat("x", 1<<20) + `"}`
		for _, path := range []string{"/invoices", "/payments", "/orders", "/orders/ord_x/complete"} {
			requireError(t, post(alice, uuid.NewString(), path, huge), http.StatusRequestEntityTooLarge, "request_too_large")
		}
		for path, bad := range map[string]string{"/invoices": `{"amount": 5000,`, "/payments": `not json`, "/orders": `{"total": 1`,
			"/orders/ord_x/complete": `[`} {
			a := c.do(t, apiCall{Method: "POST", Path: path, Header: with(alice, "Idempotency-Key", uuid.NewString()), Body: bad, Invalid: true})
			requireError(t, a, http.StatusBadRequest, "invalid_json")
		}
		for path, bad := range map[string]string{"/invoices": `{"amount": -1, "currency": "USD"}`, "/payments": `{"amount": 5}`,
			"/orders": `{"total": "12"}`, "/orders/ord_x/complete": `null`} {
			a := c.do(t, apiCall{Method: "POST", Path: path, Header: with(alice, "Idempotency-Key", uuid.NewString()), Body: bad, Invalid: true})
			requireError(t, a, http.StatusBadRequest, "invalid_request")
		}
		// What the database cannot take is invalid too.
		key := uuid.NewString()
		requireError(t, post(alice, key, "/payments", `{"invoice_id": "inv\u0000", "amount": 1}`), http.StatusBadRequest, "invalid_request")
		require.Zero(t, d.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1`, key))

		// A reused key is 422 whatever the new body holds; numbers are compared exactly.
		key = uuid.NewString()
		require.Equal(t, http.StatusCreated, post(alice, key, "/invoices", `{"amount": 9007199254740993, "currency": "USD"}`).Status)
		requireError(t, post(alice, key, "/invoices", `{"amount": 9007199254740992, "currency": "USD"}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
		a := c.do(t, apiCall{Method: "POST", Path: "/invoices", Header: with(alice, "Idempotency-Key", key), Body: `{"amount": -1}`, Invalid: true})
		requireError(t, a, http.StatusUnprocessableEntity, "idempotency_key_reused")
		requireError(t, post(alice, key, "/orders", `{"total": 1}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
		requireError(t, post(alice, key, "/payments", `{"invoice_id": "inv_x", "amount": 1}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
		requireError(t, post(alice, key, "/orders/ord_x/complete", `{}`), http.StatusUnprocessableEntity, "idempotency_key_reused")
	})

	t.Run("payments: charged, declined, over the balance, for no invoice; listed", func(t *testing.T) {
		inv := invoice("5000")
		key := uuid.NewString()
		a := post(alice, key, "/payments", `{"invoice_id": "`+inv+`", "amount": 2000}`)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		r := post(alice, key, "/payments", `{"invoice_id": "`+inv+`", "amount": 2000}`)
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(a.Body), string(r.Body))

		requireError(t, post(alice, uuid.NewString(), "/payments", `{"invoice_id": "`+inv+`", "amount": 3001}`),
			http.StatusUnprocessableEntity, "amount_exceeds_balance")
		key = uuid.NewString()
		requireError(t, post(alice, key, "/payments", `{"invoice_id": "inv_none", "amount": 1}`), http.StatusNotFound, "not_found")
		r = post(alice, key, "/payments", `{"invoice_id": "inv_none", "amount": 1}`)
		requireError(t, r, http.StatusNotFound, "not_found")
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"), "a business outcome is stored and replayed")

		setFaults(func(s *sim.Settings) { s.DeclineOver = 999 })
		requireError(t, post(alice, uuid.NewString(), "/payments", `{"invoice_id": "`+inv+`", "amount": 1000}`),
			http.StatusPaymentRequired, "card_declined")
		setFaults(func(s *sim.Settings) { s.DeclineOver = 0 })

		r = get(alice, "/payments?invoice_id="+inv)
		require.Equal(t, http.StatusOK, r.Status)
		var list struct{ Payments []struct{ Status string } }
		require.NoError(t, json.Unmarshal(r.Body, &list))
		require.Len(t, list.Payments, 2)
		require.Equal(t, []string{"succeeded", "declined"}, []string{list.Payments[0].Status, list.Payments[1].Status})
		requireError(t, get(bob, "/payments?invoice_id="+inv), http.StatusNotFound, "not_found")
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/payments", Header: alice, Invalid: true}), http.StatusBadRequest, "invalid_request")
	})

	t.Run("a payment in flight answers 409 with Retry-After", func(t *testing.T) {
		inv := invoice("5000")
		key, body := uuid.NewString(), `{"invoice_id": "`+inv+`", "amount": 100}`
		setFaults(func(s *sim.Settings) { s.Latency = 1500 * time.Millisecond })
		charges := d.sim.TotalCharges()
		first := make(chan int, 1)
		go func() { first <- rawPost(p.url+"/payments", with(alice, "Idempotency-Key", key), body) }()
		waitUntil(t, 10*time.Second, "the first request's charge", func() bool { return d.sim.TotalCharges() > charges })
		a := post(alice, key, "/payments", body)
		requireError(t, a, http.StatusConflict, "request_in_progress")
		require.NotEmpty(t, a.Header.Get("Retry-After"))
		require.Equal(t, http.StatusCreated, <-first)
		setFaults(func(s *sim.Settings) { s.Latency = 0 })
	})

	t.Run("an unavailable gateway answers 503 with Retry-After, then the retry finishes", func(t *testing.T) {
		inv := invoice("5000")
		key, body := uuid.NewString(), `{"invoice_id": "`+inv+`", "amount": 100}`
		d.sim.FailNext(100)
		a := post(alice, key, "/payments", body)
		requireError(t, a, http.StatusServiceUnavailable, "temporarily_unavailable")
		require.NotEmpty(t, a.Header.Get("Retry-After"))
		d.sim.FailNext(0)
		d.exec(`UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = $1`, key) // due now, not in Retry-After seconds
		require.Equal(t, http.StatusCreated, post(alice, key, "/payments", body).Status)
	})

	t.Run("a parked payment answers 503 operation_parked", func(t *testing.T) {
		inv := invoice("5000")
		key, body := uuid.NewString(), `{"invoice_id": "`+inv+`", "amount": 100}`
		// Neither inquiry nor keys, and the answer lost: nothing can tell whether it charged.
		setFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = false, false })
		d.sim.LoseNext(1)
		requireError(t, post(alice, key, "/payments", body), http.StatusServiceUnavailable, "operation_parked")
		setFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = true, true })
		a := post(alice, key, "/payments", body)
		requireError(t, a, http.StatusServiceUnavailable, "operation_parked")
		require.Empty(t, a.Header.Get("Retry-After"), "waiting does not help: an operator decides")
	})

	t.Run("orders and sales", func(t *testing.T) {
		a := post(alice, uuid.NewString(), "/orders", `{"total": 1200}`)
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		order := jsonString(t, a.Body, "id")
		key := uuid.NewString()
		// No body at all is {}.
		a = c.do(t, apiCall{Method: "POST", Path: "/orders/" + order + "/complete", Header: with(alice, "Idempotency-Key", key)})
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		r := post(alice, key, "/orders/"+order+"/complete", `{}`)
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(a.Body), string(r.Body))
		requireError(t, post(alice, uuid.NewString(), "/orders/"+order+"/complete", `{}`), http.StatusConflict, "order_already_completed")
		requireError(t, post(alice, uuid.NewString(), "/orders/ord_none/complete", `{}`), http.StatusNotFound, "not_found")
		requireError(t, post(bob, uuid.NewString(), "/orders/"+order+"/complete", `{}`), http.StatusNotFound, "not_found")

		r = get(alice, "/sales?order_id="+order)
		require.Equal(t, http.StatusOK, r.Status)
		require.Contains(t, string(r.Body), jsonString(t, a.Body, "sale_id"))
		requireError(t, get(alice, "/sales?order_id=ord_none"), http.StatusNotFound, "not_found")
		requireError(t, c.do(t, apiCall{Method: "GET", Path: "/sales", Header: alice, Invalid: true}), http.StatusBadRequest, "invalid_request")
	})

	t.Run("the webhook receiver", func(t *testing.T) {
		event := `{"id": "evt_1", "type": "payment.succeeded", "payload": {"id": "pay_1"}}`
		signed := func(body string, at time.Time) map[string]string {
			return map[string]string{"Pgsaga-Signature": worker.SignWebhook(at, []byte(body), []byte(webhookSecret))}
		}
		hook := func(source, body string, header map[string]string, invalid bool) apiAnswer {
			t.Helper()
			return c.do(t, apiCall{Method: "POST", Path: "/webhooks/" + source, Header: header, Body: body, Invalid: invalid})
		}
		a := hook("shop", event, signed(event, time.Now()), false)
		require.Equal(t, http.StatusOK, a.Status, string(a.Body))
		require.JSONEq(t, `{"event_id": "evt_1", "applied": true}`, string(a.Body))
		a = hook("shop", event, signed(event, time.Now()), false)
		require.JSONEq(t, `{"event_id": "evt_1", "applied": false}`, string(a.Body), "a redelivery is not applied again")

		requireError(t, hook("elsewhere", event, signed(event, time.Now()), false), http.StatusUnauthorized, "unknown_webhook_source")
		requireError(t, hook("shop", event, nil, true), http.StatusUnauthorized, "signature_missing")
		requireError(t, hook("shop", event, signed(`{"id": "evt_2"}`, time.Now()), false), http.StatusUnauthorized, "invalid_signature")
		requireError(t, hook("shop", event, signed(event, time.Now().Add(-time.Hour)), false), http.StatusUnauthorized, "signature_expired")
		requireError(t, hook("shop", "[1]", signed("[1]", time.Now()), true), http.StatusBadRequest, "invalid_json")
		requireError(t, hook("shop", `{"type": "x"}`, signed(`{"type": "x"}`, time.Now()), true), http.StatusBadRequest, "invalid_request")
		nul := `{"id": "evt\u0000", "type": "x"}`
		requireError(t, hook("shop", nul, signed(nul, time.Now()), false), http.StatusBadRequest, "invalid_event_id")
		mismatched := with(signed(event, time.Now()), "X-Event-ID", "evt_9")
		requireError(t, hook("shop", event, mismatched, false), http.StatusBadRequest, "invalid_request")
		huge := `{"id": "evt_3", "payload": "` + strings.Repeat("x", 1<<20) + `"}`
		requireError(t, hook("shop", huge, signed(huge, time.Now()), false), http.StatusRequestEntityTooLarge, "request_too_large")
	})

	t.Run("a path the API does not have is 404, a method a path does not take 405", func(t *testing.T) {
		status, header, body := httpDo(t, "GET", p.url+"/refunds", alice, "")
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, "not_found", jsonString(t, body, "error"))
		status, header, body = httpDo(t, "DELETE", p.url+"/invoices", alice, "")
		require.Equal(t, http.StatusMethodNotAllowed, status)
		require.Equal(t, "method_not_allowed", jsonString(t, body, "error"))
		require.Equal(t, "POST", header.Get("Allow"))
		for _, path := range []string{"/metrics", "/healthz"} {
			status, _, _ = httpDo(t, "GET", p.url+path, alice, "")
			require.Equal(t, http.StatusNotFound, status, "%s is on the operations address only", path)
		}
	})

	t.Run("a tenant at its share of the slots gets 429 on every route", func(t *testing.T) {
		q := start(t, []string{"PGSAGA_WEBHOOK_SECRET_SHOP=" + webhookSecret}, true,
			serveArgs(d.url, "--gateway-url", d.simURL, "--max-in-flight-per-tenant", "1", "--log-level", "off")...)
		qc := spec.client(q.url)
		inv := qc.do(t, apiCall{Method: "POST", Path: "/invoices", Header: with(alice, "Idempotency-Key", uuid.NewString()),
			Body: `{"amount": 100, "currency": "USD"}`})
		require.Equal(t, http.StatusCreated, inv.Status, string(inv.Body))
		invoiceID := jsonString(t, inv.Body, "id")

		// One payment waiting on the gateway holds alice's tenant's only slot.
		setFaults(func(s *sim.Settings) { s.Latency = 3 * time.Second })
		charges := d.sim.TotalCharges()
		held := make(chan apiAnswer, 1)
		go func() {
			held <- qc.do(t, apiCall{Method: "POST", Path: "/payments", Header: with(alice, "Idempotency-Key", uuid.NewString()),
				Body: `{"invoice_id": "` + invoiceID + `", "amount": 10}`})
		}()
		waitUntil(t, 10*time.Second, "the held payment to be at the gateway", func() bool { return d.sim.TotalCharges() > charges })
		for _, call := range []apiCall{
			{Method: "GET", Path: "/invoices/" + invoiceID},
			{Method: "GET", Path: "/payments?invoice_id=" + invoiceID},
			{Method: "GET", Path: "/sales?order_id=ord_x"},
			{Method: "POST", Path: "/invoices", Body: `{"amount": 1, "currency": "USD"}`},
			{Method: "POST", Path: "/payments", Body: `{"invoice_id": "` + invoiceID + `", "amount": 1}`},
			{Method: "POST", Path: "/orders", Body: `{"total": 1}`},
			{Method: "POST", Path: "/orders/ord_x/complete", Body: `{}`},
		} {
			call.Header = alice
			if call.Method == "POST" {
				call.Header = with(alice, "Idempotency-Key", uuid.NewString())
			}
			a := qc.do(t, call)
			requireError(t, a, http.StatusTooManyRequests, "too_many_requests")
			require.Equal(t, "1", a.Header.Get("Retry-After"), call.Path)
		}
		a := qc.do(t, apiCall{Method: "GET", Path: "/invoices/inv_x", Header: bob})
		requireError(t, a, http.StatusNotFound, "not_found") // another tenant is served meanwhile
		setFaults(func(s *sim.Settings) { s.Latency = 0 })
		require.Equal(t, http.StatusCreated, (<-held).Status)

		// A delivery waiting on the inbox (a row another transaction holds) holds its source's
		// only slot: the source's next delivery is 429.
		tx, err := d.pool.Begin(t.Context())
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) }()
		_, err = tx.Exec(t.Context(), `INSERT INTO pgsaga_inbox (source, event_id) VALUES ('shop', 'evt_held')`)
		require.NoError(t, err)
		deliver := func(id string) apiAnswer {
			body := `{"id": "` + id + `", "type": "t"}`
			return qc.do(t, apiCall{Method: "POST", Path: "/webhooks/shop", Body: body,
				Header: map[string]string{"Pgsaga-Signature": worker.SignWebhook(time.Now(), []byte(body), []byte(webhookSecret))}})
		}
		waiting := make(chan apiAnswer, 1)
		go func() { waiting <- deliver("evt_held") }()
		waitUntil(t, 10*time.Second, "the delivery to wait on the inbox row", func() bool {
			var n int
			require.NoError(t, d.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&n))
			return n > 0
		})
		a = deliver("evt_next")
		requireError(t, a, http.StatusTooManyRequests, "too_many_requests")
		require.NoError(t, tx.Rollback(t.Context()))
		require.Equal(t, http.StatusOK, (<-waiting).Status)
	})

	t.Run("the operations endpoints", func(t *testing.T) {
		a := o.do(t, apiCall{Method: "GET", Path: "/healthz"})
		require.JSONEq(t, `{"status": "ok"}`, string(a.Body))
		a = o.do(t, apiCall{Method: "GET", Path: "/metrics"})
		require.Equal(t, http.StatusOK, a.Status)
		require.Contains(t, string(a.Body), "pgsaga_requests_total")
	})

	t.Run("a database that refuses writes: /healthz answers read_only", func(t *testing.T) {
		// As a failover leaves the old primary: read-only, its sessions ended.
		err := pgx.BeginTxFunc(t.Context(), d.pool, pgx.TxOptions{AccessMode: pgx.ReadWrite}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(t.Context(), `ALTER DATABASE postgres SET default_transaction_read_only = on`); err != nil {
				return err
			}
			_, err := tx.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`)
			return err
		})
		require.NoError(t, err)
		d.pool.Reset()
		waitUntil(t, 10*time.Second, "/healthz to say read_only", func() bool {
			a := o.do(t, apiCall{Method: "GET", Path: "/healthz"})
			return a.Status == http.StatusServiceUnavailable && jsonString(t, a.Body, "status") == "read_only"
		})
	})

	t.Run("with the database stopped, every route answers 503", func(t *testing.T) {
		d.down()
		a := o.do(t, apiCall{Method: "GET", Path: "/healthz"})
		require.Equal(t, http.StatusServiceUnavailable, a.Status)
		require.Equal(t, "unavailable", jsonString(t, a.Body, "status"))
		for _, call := range []apiCall{
			{Method: "GET", Path: "/invoices/inv_x"},
			{Method: "GET", Path: "/payments?invoice_id=inv_x"},
			{Method: "GET", Path: "/sales?order_id=ord_x"},
			{Method: "POST", Path: "/invoices", Body: `{"amount": 1, "currency": "USD"}`},
			{Method: "POST", Path: "/payments", Body: `{"invoice_id": "inv_x", "amount": 1}`},
			{Method: "POST", Path: "/orders", Body: `{"total": 1}`},
			{Method: "POST", Path: "/orders/ord_x/complete", Body: `{}`},
		} {
			call.Header = alice
			if call.Method == "POST" {
				call.Header = with(alice, "Idempotency-Key", uuid.NewString())
			}
			a := c.do(t, call)
			requireError(t, a, http.StatusServiceUnavailable, "temporarily_unavailable")
			require.NotEmpty(t, a.Header.Get("Retry-After"), call.Path)
		}
		event := `{"id": "evt_4"}`
		a = c.do(t, apiCall{Method: "POST", Path: "/webhooks/shop", Body: event,
			Header: map[string]string{"Pgsaga-Signature": worker.SignWebhook(time.Now(), []byte(event), []byte(webhookSecret))}})
		requireError(t, a, http.StatusServiceUnavailable, "temporarily_unavailable")
	})

	t.Run("--insecure-scope-headers takes the scope from X-Tenant-ID and X-Actor-ID", func(t *testing.T) {
		w := newWorld(t)
		h := start(t, nil, true, serveArgs(w.db.URL, "--insecure-scope-headers", "--log-level", "off")...)
		hc := spec.client(h.url)
		scope := map[string]string{"X-Tenant-ID": "t1", "X-Actor-ID": "alice", "Idempotency-Key": uuid.NewString()}
		a := hc.do(t, apiCall{Method: "POST", Path: "/orders", Header: scope, Body: `{"total": 5}`})
		require.Equal(t, http.StatusCreated, a.Status, string(a.Body))
		a = hc.do(t, apiCall{Method: "POST", Path: "/orders", Header: map[string]string{"X-Tenant-ID": "t1", "Idempotency-Key": uuid.NewString()},
			Body: `{"total": 5}`, Invalid: true})
		requireError(t, a, http.StatusUnauthorized, "unauthenticated")
	})

	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
	spec.requireCovered(map[string]string{
		"createInvoice 500": "internal_error is what the server cannot classify; nothing the test can do makes one",
		"createPayment 500": "idem",
		"createOrder 500":   "idem",
		"completeOrder 500": "idem",
	})
	ops.requireCovered(nil)
}

// with is header plus name: value.
func with(header map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range header {
		out[k] = v
	}
	return out
}

// rawPost sends a JSON POST outside the test's checks (from another goroutine) and returns its
// status, or 0 when it could not be sent.
func rawPost(url string, header map[string]string, body string) int {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
