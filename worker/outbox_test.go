package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// delivery is one POST the receiver got.
type delivery struct {
	eventID, eventType string
	status             int
	body               []byte
}

// flakyReceiver serves the payments example's webhook receiver, but answers 500 to the first
// delivery after the receiver has applied it (an acknowledgement lost on the way back), so the
// worker delivers the event again.
type flakyReceiver struct {
	mu         sync.Mutex
	deliveries []delivery
	inner      http.Handler
}

func (f *flakyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	f.inner.ServeHTTP(rec, r)
	f.mu.Lock()
	defer f.mu.Unlock()
	status := rec.Code
	if len(f.deliveries) == 0 {
		status = http.StatusInternalServerError
	}
	f.deliveries = append(f.deliveries, delivery{eventID: r.Header.Get("X-Event-ID"), eventType: r.Header.Get("X-Event-Type"), status: status, body: rec.Body.Bytes()})
	w.WriteHeader(status)
	_, _ = w.Write(rec.Body.Bytes())
}

func (f *flakyReceiver) got() []delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]delivery(nil), f.deliveries...)
}

// A succeeded payment emits payment.succeeded in the transaction that records it; the worker
// delivers it, the receiver applies it and its acknowledgement is lost (500), River delivers it
// again, and the inbox makes the second delivery a no-op: applied once, acknowledged twice.
// webhookSecret is what the worker signs deliveries with and the receiver checks them against.
var webhookSecret = []byte("outbox-test-secret-0123456789")

func TestOutboxDeliveredTwiceIsAppliedOnce(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE received_payments (event_id text NOT NULL, payment_id text NOT NULL, amount bigint NOT NULL)`)
	require.NoError(t, err)

	recv := &flakyReceiver{inner: func() http.Handler {
		mux := http.NewServeMux()
		mux.Handle("POST /webhooks/{source}", payments.WebhookHandler(db.Pool, &payments.WebhookOpts{
			Secrets: map[string][]byte{"payments": webhookSecret},
			Apply: func(ctx context.Context, tx pgx.Tx, source string, e *worker.Event) error {
				var p payments.Payment
				if err := json.Unmarshal(e.Payload, &p); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO received_payments VALUES ($1, $2, $3)`, e.ID, p.ID, p.Amount)
				return err
			},
		}))
		return mux
	}()}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)

	outbox, err := worker.NewOutbox()
	require.NoError(t, err)
	gw := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: gw.Gateway(),
		PaymentHooks: []payments.PaymentHook{payments.PaymentSucceededHook(outbox)}})
	require.NoError(t, err)
	startWorker(t, &worker.Config{Pool: db.Pool, Client: svc.Client(), WebhookURL: srv.URL + "/webhooks/payments",
		WebhookSecrets: [][]byte{webhookSecret}})

	c := svc.Client()
	inv, err := c.Run(ctx, payments.OpCreateInvoice, &saga.Request{Scope: scope, Key: "invoice-key-1", Method: "POST", Path: "/invoices",
		Body: []byte(`{"amount": 5000, "currency": "USD"}`)})
	require.NoError(t, err)
	var invoice struct{ ID string }
	require.NoError(t, json.Unmarshal(inv.Response.Body, &invoice))
	res, err := c.Run(ctx, payments.OpCreatePayment, &saga.Request{Scope: scope, Key: "payment-key-1", Method: "POST", Path: "/payments",
		Body: []byte(`{"invoice_id": "` + invoice.ID + `", "amount": 2000}`)})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	var payment payments.Payment
	require.NoError(t, json.Unmarshal(res.Response.Body, &payment))
	// A replay of the request emits nothing more.
	_, err = c.Run(ctx, payments.OpCreatePayment, &saga.Request{Scope: scope, Key: "payment-key-1", Method: "POST", Path: "/payments",
		Body: []byte(`{"invoice_id": "` + invoice.ID + `", "amount": 2000}`)})
	require.NoError(t, err)

	waitFor(t, "the event's delivery job to complete", 30*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox' AND state = 'completed'`) == 1
	})
	got := recv.got()
	require.Len(t, got, 2, "delivered, acknowledgement lost, delivered again")
	wantID := payments.EventPaymentSucceeded + ":" + payment.ID
	for _, d := range got {
		require.Equal(t, wantID, d.eventID)
		require.Equal(t, payments.EventPaymentSucceeded, d.eventType)
	}
	require.Equal(t, http.StatusInternalServerError, got[0].status)
	require.Equal(t, http.StatusOK, got[1].status)
	require.JSONEq(t, `{"event_id": "`+wantID+`", "applied": true}`, string(got[0].body), "the first delivery was applied")
	require.JSONEq(t, `{"event_id": "`+wantID+`", "applied": false}`, string(got[1].body), "the second was recognised")

	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM received_payments WHERE payment_id = $1 AND amount = 2000`, payment.ID))
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM received_payments`))
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_inbox WHERE source = 'payments' AND event_id = $1`, wantID))
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox'`), "one event for one payment")
}

// EmitTx writes in the caller's transaction: rolled back, there is no event.
func TestEmitTxFollowsTheTransaction(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	outbox, err := worker.NewOutbox()
	require.NoError(t, err)

	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, outbox.EmitTx(ctx, tx, worker.Event{Type: "thing.happened", Payload: json.RawMessage(`{"a":1}`)}))
	require.NoError(t, tx.Rollback(ctx))
	require.Zero(t, countRows(t, db.Pool, `SELECT count(*) FROM river_job`))

	tx, err = db.Pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, outbox.EmitTx(ctx, tx, worker.Event{Type: "thing.happened", Tenant: "t1"}))
	require.NoError(t, tx.Commit(ctx))
	var args []byte
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT args FROM river_job WHERE kind = 'pgsaga_outbox'`).Scan(&args))
	var job worker.OutboxArgs
	require.NoError(t, json.Unmarshal(args, &job))
	require.Len(t, job.Event.ID, 36, "a UUID is given when none is")
	require.Equal(t, "thing.happened", job.Event.Type)
	require.Equal(t, "t1", job.Event.Tenant)
	require.JSONEq(t, `null`, string(job.Event.Payload))

	for _, tc := range []struct {
		name string
		e    worker.Event
		want string
	}{
		{"no type", worker.Event{}, "Event.Type"},
		{"bad payload", worker.Event{Type: "x", Payload: json.RawMessage(`{`)}, "Event.Payload"},
		{"long id", worker.Event{Type: "x", ID: string(make([]byte, 256))}, "Event.ID"},
	} {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		require.ErrorContains(t, outbox.EmitTx(ctx, tx, tc.e), tc.want, tc.name)
		require.NoError(t, tx.Rollback(ctx))
	}
}

// Without a WebhookURL, events are marked delivered without a POST; a receiver answering
// non-2xx keeps the event queued for River's retries.
func TestDeliveryOutcomes(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)

	c := newClient(t, db.Pool, &saga.Config{})
	failing := startWorker(t, &worker.Config{Pool: db.Pool, Client: c, WebhookURL: srv.URL})
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	outbox, err := worker.NewOutbox()
	require.NoError(t, err)
	require.NoError(t, outbox.EmitTx(ctx, tx, worker.Event{ID: "evt-1", Type: "thing.happened", Payload: json.RawMessage(`{"a": 1}`)}))
	require.NoError(t, tx.Commit(ctx))
	waitFor(t, "a failed delivery to be scheduled for retry", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox' AND state = 'retryable'`) == 1
	})
	require.NoError(t, failing.Stop(ctx))
	mu.Lock()
	posts := len(bodies) // one, or two if River's first retry came before Stop
	require.NotZero(t, posts)
	require.JSONEq(t, `{"id": "evt-1", "type": "thing.happened", "payload": {"a": 1}}`, string(bodies[0]))
	mu.Unlock()

	// A worker without a URL marks it delivered.
	_, err = db.Pool.Exec(ctx, `UPDATE river_job SET scheduled_at = now(), state = 'available' WHERE kind = 'pgsaga_outbox'`)
	require.NoError(t, err)
	startWorker(t, &worker.Config{Pool: db.Pool, Client: c})
	waitFor(t, "the event to be marked delivered", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox' AND state = 'completed'`) == 1
	})
	mu.Lock()
	require.Len(t, bodies, posts, "no POST without a URL")
	mu.Unlock()
}

// The wiring order with no cycle: the outbox is built before anything else (it needs no pool
// and no worker), the operation emits through it inside its phase, the saga client is built from
// the operation, and the worker from the client. A request emits one event, in the phase's
// transaction, and the worker delivers it; a phase that fails leaves no event.
func TestOutboxBuiltBeforeTheWorker(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	_, err := db.Pool.Exec(ctx, `CREATE TABLE shipments (key text PRIMARY KEY)`)
	require.NoError(t, err)

	outbox, err := worker.NewOutbox()
	require.NoError(t, err)
	ship := &phases.Operation{Name: "ship", Steps: []phases.Step{
		phases.Atomic("shipped", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			if _, err := tx.Exec(ctx, `INSERT INTO shipments (key) VALUES ($1)`, run.Key()); err != nil {
				return err
			}
			if err := outbox.EmitTx(ctx, tx, worker.Event{ID: "order.shipped:" + run.Key(), Type: "order.shipped",
				Tenant: run.Tenant(), Payload: json.RawMessage(`{"key": "` + run.Key() + `"}`)}); err != nil {
				return err
			}
			if strings.HasPrefix(run.Key(), "refused") {
				return phases.Reject(http.StatusConflict, "out_of_stock", "nothing left to ship")
			}
			return run.Respond(http.StatusCreated, map[string]string{"status": "shipped"})
		}),
	}}
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{ship}})

	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Event-ID"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	startWorker(t, &worker.Config{Pool: db.Pool, Client: c, WebhookURL: srv.URL})

	for _, key := range []string{"order-0001-abc", "refused-0002-abc"} {
		_, err := c.Run(ctx, "ship", &saga.Request{Scope: scope, Key: key, Method: "POST", Path: "/ship", Body: []byte(`{}`)})
		if key == "order-0001-abc" {
			require.NoError(t, err)
		}
	}
	waitFor(t, "the event's delivery", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	})
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox'`), "the rejected phase's event rolled back with it")
	mu.Lock()
	require.Equal(t, []string{"order.shipped:order-0001-abc"}, got)
	mu.Unlock()
}
