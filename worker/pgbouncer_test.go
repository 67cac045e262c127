package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// The tests named TestPgBouncer* run the worker, River and the payments service through
// PgBouncer in transaction pooling mode (dbtest.PooledPool).

// pooledURLParams makes a pool through PgBouncer use the exec mode transaction pooling needs.
const pooledURLParams = "default_query_exec_mode=cache_describe"

// A payment whose process died after the charge went out is finished by a worker through the
// pooler (River in poll-only mode: its leader enqueues the periodic sweep, the sweep's resume
// job resumes the key), and its payment.succeeded event, inserted by the recording phase, is
// delivered once to a receiver whose inbox is reached through the pooler too.
func TestPgBouncerWorkerFinishesCrashedPaymentAndDelivers(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	pooled := db.PooledPool(t, pooledURLParams)
	_, err := db.Pool.Exec(ctx, `CREATE TABLE received_payments (event_id text NOT NULL, payment_id text NOT NULL)`)
	require.NoError(t, err)

	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/{source}", payments.WebhookHandler(pooled, &payments.WebhookOpts{
		Secrets: map[string][]byte{"payments": webhookSecret},
		Apply: func(ctx context.Context, tx pgx.Tx, source string, e *worker.Event) error {
			var p payments.Payment
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO received_payments VALUES ($1, $2)`, e.ID, p.ID)
			return err
		},
	}))
	receiver := httptest.NewServer(mux)
	t.Cleanup(receiver.Close)

	outbox, err := worker.NewOutbox()
	require.NoError(t, err)
	gw := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: pooled, TransactionPooling: true, Gateway: gw.Gateway(), GatewayRetries: 1,
		PaymentHooks: []payments.PaymentHook{payments.PaymentSucceededHook(outbox)}})
	require.NoError(t, err)
	c := svc.Client()

	inv, err := c.Run(ctx, payments.OpCreateInvoice, &saga.Request{Scope: scope, Key: "invoice-key-1", Method: "POST", Path: "/invoices",
		Body: []byte(`{"amount": 5000, "currency": "USD"}`)})
	require.NoError(t, err)
	var invoice struct{ ID string }
	require.NoError(t, json.Unmarshal(inv.Response.Body, &invoice))
	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = false })
	require.NoError(t, err)
	gw.LoseNext(2)
	_, err = c.Run(ctx, payments.OpCreatePayment, &saga.Request{Scope: scope, Key: "payment-key-1", Method: "POST", Path: "/payments",
		Body: []byte(`{"invoice_id": "` + invoice.ID + `", "amount": 2000}`)})
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	require.Equal(t, 1, gw.TotalCharges())
	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = true })
	require.NoError(t, err)
	// The process "died": its retry is due now.
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET locked_until = now() - interval '1 second', next_attempt_at = now() WHERE key = 'payment-key-1'`)
	require.NoError(t, err)

	startWorker(t, &worker.Config{Pool: pooled, Client: c, PollOnly: true,
		WebhookURL: receiver.URL + "/webhooks/payments", WebhookSecrets: [][]byte{webhookSecret}})
	waitFor(t, "the worker to complete the payment", 20*time.Second, func() bool {
		k, err := c.KeyGet(ctx, scope, "payment-key-1")
		require.NoError(t, err)
		return k.Status == saga.KeyStatusCompleted
	})
	k, err := c.KeyGet(ctx, scope, "payment-key-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, k.Response.Status, string(k.Response.Body))
	require.Equal(t, 1, gw.TotalCharges(), "one charge")
	require.Equal(t, 2000, countRows(t, db.Pool, `SELECT paid FROM invoices WHERE id = $1`, invoice.ID))

	waitFor(t, "the event's delivery job to complete", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_outbox' AND state = 'completed'`) == 1
	})
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM received_payments`))
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_inbox WHERE source = 'payments'`))
}

// River's periodic GC runs through the pooler, on the leader it elects by polling.
func TestPgBouncerWorkerRunsRetentionGC(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	seedAged(t, db.Pool, "expired", "completed", 4, 48*time.Hour, -24*time.Hour)
	seedAged(t, db.Pool, "fresh", "completed", 1, time.Minute, 24*time.Hour)
	pooled := db.PooledPool(t, pooledURLParams)
	startWorker(t, &worker.Config{Pool: pooled, PollOnly: true,
		Client: newClient(t, pooled, &saga.Config{TransactionPooling: true})})
	waitFor(t, "GC to delete the expired keys", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key`) == 1
	})
	require.Equal(t, map[string]int{"fresh": 1}, statusCounts(t, db.Pool))
}

// A worker whose River would LISTEN through the pooler refuses to start, naming the setting.
func TestPgBouncerWorkerRefusesToListenThroughThePooler(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	pooled := db.PooledPool(t, pooledURLParams)
	w, err := worker.New(&worker.Config{Pool: pooled, Client: newClient(t, pooled, &saga.Config{TransactionPooling: true})})
	require.NoError(t, err)
	// No notification can come through the pooler: a short deadline decides as well as 5s.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err = w.Start(ctx)
	require.ErrorIs(t, err, saga.ErrListenUnheard)
	require.ErrorContains(t, err, "Set Config.PollOnly")
}
