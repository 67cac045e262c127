package worker_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// A payment whose charge lost its answer is finished by the worker, and its trace goes on: the
// resume job is a river.work span, and the pgsaga.resume span under it is a child of the
// request that claimed the key, linked to the job's span. The sweep, which runs every 50ms here,
// makes no span.
func TestWorkerResumeJoinsTheRequestsTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	db := dbtest.NewDB(t)
	gw := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: gw.Gateway(), GatewayRetries: 1, TracerProvider: tp})
	require.NoError(t, err)
	c := svc.Client()
	ctx := t.Context()

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
	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = true })
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = 'payment-key-1'`)
	require.NoError(t, err)

	startWorker(t, &worker.Config{Pool: db.Pool, Client: c})
	waitFor(t, "the worker to complete the payment", 20*time.Second, func() bool {
		k, err := c.KeyGet(ctx, scope, "payment-key-1")
		require.NoError(t, err)
		return k.Status == saga.KeyStatusCompleted
	})
	waitFor(t, "the resume's span to end", 5*time.Second, func() bool { return len(named(rec, "pgsaga.resume")) == 1 })

	var request sdktrace.ReadOnlySpan
	for _, sp := range named(rec, "pgsaga.request") {
		if attribute(sp, "pgsaga.key") == "payment-key-1" {
			request = sp
		}
	}
	require.NotNil(t, request)
	jobs := named(rec, "river.work/pgsaga_resume_batch")
	require.Len(t, jobs, 1)
	resume := named(rec, "pgsaga.resume")[0]
	require.Equal(t, request.SpanContext().TraceID(), resume.SpanContext().TraceID(), "the resume is in the request's trace")
	require.Equal(t, request.SpanContext().SpanID(), resume.Parent().SpanID())
	require.Len(t, resume.Links(), 1)
	require.Equal(t, jobs[0].SpanContext().SpanID(), resume.Links()[0].SpanContext.SpanID(), "the resume links to its job")
	require.Equal(t, "worker", attribute(resume, "pgsaga.resumed_by"))
	require.Empty(t, named(rec, "river.work/pgsaga_sweep"), "the sweep is not traced")
}

func named(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	return out
}

func attribute(sp sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range sp.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
