package saga_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// spans records the spans a test's tracer provider ends.
type spans struct {
	t   *testing.T
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
}

func newSpans(t *testing.T) *spans {
	rec := tracetest.NewSpanRecorder()
	return &spans{t: t, rec: rec, tp: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}
}

// named are the ended spans called name, in the order they started.
func (s *spans) named(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, sp := range s.rec.Ended() {
		if sp.Name() == name {
			out = append(out, sp)
		}
	}
	slices.SortFunc(out, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return out
}

// one is the only ended span called name.
func (s *spans) one(name string) sdktrace.ReadOnlySpan {
	s.t.Helper()
	found := s.named(name)
	require.Len(s.t, found, 1, "spans named %s", name)
	return found[0]
}

// children are the ended spans whose parent is parent, in the order they started, as
// "name" or "name:detail" (a phase's recovery point, a call's or a compensation's step).
func (s *spans) children(parent trace.SpanContext) []string {
	var kids []sdktrace.ReadOnlySpan
	for _, sp := range s.rec.Ended() {
		if sp.Parent().SpanID() == parent.SpanID() && sp.Parent().TraceID() == parent.TraceID() {
			kids = append(kids, sp)
		}
	}
	slices.SortFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	out := make([]string, len(kids))
	for i, sp := range kids {
		out[i] = sp.Name()
		for _, key := range []attribute.Key{"pgsaga.recovery_point", "pgsaga.step"} {
			if v, ok := attr(sp, key); ok && sp.Name() != "pgsaga.resume" {
				out[i] += ":" + v.Emit()
				break
			}
		}
	}
	return out
}

// start starts a span of the test's own, standing for the caller's (an HTTP server's, a River
// job's).
func (s *spans) start(ctx context.Context, name string) (context.Context, trace.Span) {
	return s.tp.Tracer("test").Start(ctx, name)
}

func attr(sp sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range sp.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func requireAttrs(t *testing.T, sp sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	for key, v := range want {
		got, ok := attr(sp, key)
		require.True(t, ok, "%s has no attribute %s", sp.Name(), key)
		require.Equal(t, v, got.AsInterface(), "%s's %s", sp.Name(), key)
	}
}

// requireChildOf checks that child's parent is parent (a span context, possibly one whose span
// never ended: a process that died).
func requireChildOf(t *testing.T, child sdktrace.ReadOnlySpan, parent trace.SpanContext) {
	t.Helper()
	require.Equal(t, parent.TraceID(), child.SpanContext().TraceID(), "%s is not in its parent's trace", child.Name())
	require.Equal(t, parent.SpanID(), child.Parent().SpanID(), "%s's parent", child.Name())
}

// requireLinkedTo checks that sp links to target.
func requireLinkedTo(t *testing.T, sp sdktrace.ReadOnlySpan, target trace.SpanContext) {
	t.Helper()
	for _, l := range sp.Links() {
		if l.SpanContext.TraceID() == target.TraceID() && l.SpanContext.SpanID() == target.SpanID() {
			return
		}
	}
	require.Failf(t, "no link", "%s has no link to %s (links: %v)", sp.Name(), target.SpanID(), sp.Links())
}

// storedTraceContext is the trace context stored with key ("" for NULL).
func storedTraceContext(h *harness, key string) string {
	h.t.Helper()
	var tc *string
	require.NoError(h.t, h.db.Pool.QueryRow(h.t.Context(), `SELECT trace_context FROM pgsaga_key WHERE key = $1`, key).Scan(&tc))
	if tc == nil {
		return ""
	}
	return *tc
}

func singleOp(*harness) []*phases.Operation {
	return []*phases.Operation{{Name: "single", Steps: []phases.Step{
		phases.Atomic("done", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, 'done')`, run.Key()); err != nil {
				return err
			}
			return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
		}),
	}}}
}

// TestTracingSingleTransaction: a single-transaction request is a pgsaga.request span (a child
// of the caller's) with one pgsaga.phase; its replay is a pgsaga.request whose phase was stopped
// at its first statement by the stored key (pgsaga.outcome key_stored, not an error).
func TestTracingSingleTransaction(t *testing.T) {
	t.Parallel()
	sp := newSpans(t)
	h := newHarness(t, &saga.Config{TracerProvider: sp.tp}, singleOp)
	key := "single-" + newID()
	ctx, server := sp.start(t.Context(), "POST /single")
	_, err := h.client.Run(ctx, "single", h.req(key, `{}`))
	require.NoError(t, err)
	server.End()

	req := sp.one("pgsaga.request")
	requireChildOf(t, req, server.SpanContext())
	requireAttrs(t, req, map[attribute.Key]any{"pgsaga.operation": "single", "pgsaga.tenant": "tenant-1",
		"pgsaga.actor": "alice", "pgsaga.key": key, "pgsaga.outcome": "executed"})
	require.Equal(t, codes.Unset, req.Status().Code)
	require.Equal(t, []string{"pgsaga.phase:done"}, sp.children(req.SpanContext()))
	requireAttrs(t, sp.one("pgsaga.phase"), map[attribute.Key]any{"pgsaga.attempt": int64(1)})

	_, err = h.client.Run(t.Context(), "single", h.req(key, `{}`))
	require.NoError(t, err)
	reqs := sp.named("pgsaga.request")
	require.Len(t, reqs, 2)
	requireAttrs(t, reqs[1], map[attribute.Key]any{"pgsaga.outcome": "replayed"})
	require.Equal(t, []string{"pgsaga.phase:done"}, sp.children(reqs[1].SpanContext()))
	stopped := sp.named("pgsaga.phase")[1]
	requireAttrs(t, stopped, map[attribute.Key]any{"pgsaga.outcome": "key_stored"})
	require.Equal(t, codes.Unset, stopped.Status().Code)

	// The same key with another body: 422, an error of the request, not of the service.
	_, err = h.client.Run(t.Context(), "single", h.req(key, `{"other": 1}`))
	require.ErrorIs(t, err, saga.ErrKeyReused)
	reqs = sp.named("pgsaga.request")
	requireAttrs(t, reqs[2], map[attribute.Key]any{"pgsaga.outcome": "mismatch", "error.type": saga.CodeKeyReused})
	require.Equal(t, codes.Unset, reqs[2].Status().Code)

	// RunTx: the same spans, in the caller's transaction.
	key2 := "single-tx-" + newID()
	tx, err := h.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = h.client.RunTx(t.Context(), tx, "single", h.req(key2, `{}`))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))
	reqs = sp.named("pgsaga.request")
	require.Len(t, reqs, 4)
	requireAttrs(t, reqs[3], map[attribute.Key]any{"pgsaga.key": key2, "pgsaga.outcome": "executed"})
	require.Equal(t, []string{"pgsaga.phase:done"}, sp.children(reqs[3].SpanContext()))

	// The key stores the trace context of the request that claimed it.
	require.Equal(t, traceparentOf(req.SpanContext()), storedTraceContext(h, key))
}

func traceparentOf(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

const opPay = "pay"

// payOp is a payment: a phase creates it, a call charges it under a reference derived from the
// key (charge decides the call's result), a phase records it.
func payOp(charge func(ctx context.Context, run *phases.Run) error) func(*harness) []*phases.Operation {
	return func(*harness) []*phases.Operation {
		return []*phases.Operation{{
			Name: opPay,
			Steps: []phases.Step{
				phases.Atomic("created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					_, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, 'created')`, run.Key())
					return err
				}),
				phases.Call("charged", charge).WithReference(func(run *phases.Run) (string, error) {
					return "payment:" + run.Key(), nil
				}),
				phases.Atomic("recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					return run.Respond(http.StatusCreated, map[string]string{"status": "succeeded"})
				}),
			},
			Settle: func(ctx context.Context, tx pgx.Tx, run *phases.Run, s *phases.Settlement) error {
				return run.Respond(http.StatusCreated, map[string]string{"status": "succeeded", "charge_id": s.Reference})
			},
		}}
	}
}

func charged(_ context.Context, run *phases.Run) error {
	run.RecordCall(phases.CallOutcomeSucceeded, "ch_"+run.Key())
	return nil
}

// TestTracingPhasedPayment: a phased payment is a pgsaga.request with, in order, the phase that
// creates it, the call that charges it (attempt, outcome, reference, provider id) and the phase
// that records it.
func TestTracingPhasedPayment(t *testing.T) {
	t.Parallel()
	sp := newSpans(t)
	h := newHarness(t, &saga.Config{TracerProvider: sp.tp}, payOp(charged))
	key := "pay-" + newID()
	_, err := h.client.Run(t.Context(), opPay, h.req(key, `{}`))
	require.NoError(t, err)

	req := sp.one("pgsaga.request")
	require.False(t, req.Parent().IsValid(), "no caller's span: the request is a root")
	require.Equal(t, []string{"pgsaga.phase:created", "pgsaga.call:charged", "pgsaga.phase:recorded"}, sp.children(req.SpanContext()))
	call := sp.one("pgsaga.call")
	require.Equal(t, trace.SpanKindClient, call.SpanKind())
	requireAttrs(t, call, map[attribute.Key]any{"pgsaga.attempt": int64(1), "pgsaga.call.outcome": "succeeded",
		"pgsaga.call.reference": "payment:" + key, "pgsaga.call.provider_id": "ch_" + key})
	require.Equal(t, traceparentOf(req.SpanContext()), storedTraceContext(h, key))
}

// TestTracingCompensation: a declined charge compensates the phases before it, newest first, each
// in a pgsaga.compensate span.
func TestTracingCompensation(t *testing.T) {
	t.Parallel()
	sp := newSpans(t)
	r := &reserveThenCharge{charge: func(run *phases.Run) error {
		run.RecordCall(phases.CallOutcomeDeclined, "ch_declined")
		return declined(run)
	}}
	h := newHarness(t, &saga.Config{TracerProvider: sp.tp}, r.ops)
	_, err := h.client.Run(t.Context(), opReserve, h.req("declined-"+newID(), `{}`))
	require.NoError(t, err)
	req := sp.one("pgsaga.request")
	require.Equal(t, []string{"pgsaga.phase:hold_seat", "pgsaga.phase:hold_meal", "pgsaga.call:charge",
		"pgsaga.compensate:hold_meal", "pgsaga.compensate:hold_seat"}, sp.children(req.SpanContext()))
	requireAttrs(t, sp.one("pgsaga.call"), map[attribute.Key]any{"pgsaga.call.outcome": "declined",
		"pgsaga.call.provider_id": "ch_declined", "error.type": "card_declined"})
	requireAttrs(t, req, map[attribute.Key]any{"pgsaga.outcome": "executed"}) // the decline is stored and answered
}

// TestTracingCrashMidCallResumed: the first execution dies after its charge acted and before the
// phase that records it (its request span and its call span never end, as in a process killed
// mid-call). Whoever continues the key, the trace goes on: the worker's resume and an operator's
// are children of the request that claimed the key (the worker's linked to its job's span), a
// client's retry takes the key over in its own request, linked to the first.
func TestTracingCrashMidCallResumed(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"worker", "operator", "retry"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			sp := newSpans(t)
			h := newHarness(t, &saga.Config{TracerProvider: sp.tp}, payOp(charged))
			key := "crash-" + newID()
			h.points.Crash(chaos.AfterStep(opPay, "charged"))
			crashed := crash.Run(func() { _, _ = h.client.Run(t.Context(), opPay, h.req(key, `{}`)) })
			require.True(t, crashed)

			// What the dead execution left: the phase it committed, under its request's span.
			require.Empty(t, sp.named("pgsaga.request"), "a dead request never ends its span")
			created := sp.one("pgsaga.phase")
			claimed := created.Parent()
			require.Equal(t, traceparentOf(claimed), storedTraceContext(h, key))
			h.expireLease(key)

			var (
				res *saga.Result
				err error
				job trace.Span
			)
			switch by {
			case "worker":
				// As the worker's resume job runs it: under its job's span.
				var ctx context.Context
				ctx, job = sp.start(t.Context(), "river.work/pgsaga_resume_batch")
				out, rerr := h.client.Internal(sibling.Token{}).ResumeDue(ctx, []sibling.KeyRef{{Tenant: h.scope.Tenant, Actor: h.scope.Actor, Key: key}})
				err = rerr
				require.NoError(t, err)
				require.True(t, out[0].Taken)
				res, err = out[0].Result, out[0].Err
				job.End()
			case "operator":
				res, err = h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{By: "alice"})
			case "retry":
				res, err = h.client.Run(t.Context(), opPay, h.req(key, `{}`))
			}
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, res.Response.Status)

			resume := sp.one("pgsaga.resume")
			requireAttrs(t, resume, map[attribute.Key]any{"pgsaga.resumed_by": by, "pgsaga.key": key,
				"pgsaga.operation": opPay, "pgsaga.attempt": int64(2), "pgsaga.recovery_point": "created",
				"pgsaga.outcome": "executed"})
			switch by {
			case "retry":
				retry := sp.one("pgsaga.request")
				require.NotEqual(t, claimed.TraceID(), retry.SpanContext().TraceID(), "the retry came in its own trace")
				requireChildOf(t, resume, retry.SpanContext())
				requireLinkedTo(t, resume, claimed)
				require.Equal(t, "pgsaga.takeover", retry.Events()[0].Name)
			case "worker":
				requireChildOf(t, resume, claimed)
				requireLinkedTo(t, resume, job.SpanContext())
			case "operator":
				requireChildOf(t, resume, claimed)
				requireAttrs(t, resume, map[attribute.Key]any{"pgsaga.operator": "alice"})
			}
			// The resume charges again (the same reference: the provider's key answers with the
			// first charge) and records the payment.
			require.Equal(t, []string{"pgsaga.call:charged", "pgsaga.phase:recorded"}, sp.children(resume.SpanContext()))
			requireAttrs(t, sp.one("pgsaga.call"), map[attribute.Key]any{"pgsaga.attempt": int64(2),
				"pgsaga.call.reference": "payment:" + key, "pgsaga.call.outcome": "succeeded"})
		})
	}
}

// TestTracingParkedThenSettled: a charge whose outcome nothing can resolve parks the payment: its
// request span fails with the reason, in a pgsaga.parked event. The operator's settlement is a
// pgsaga.settle span in the same trace, a child of that request.
func TestTracingParkedThenSettled(t *testing.T) {
	t.Parallel()
	sp := newSpans(t)
	unknown := func(context.Context, *phases.Run) error {
		return phases.OutcomeUnknown(errors.New("the provider cannot be asked"))
	}
	h := newHarness(t, &saga.Config{TracerProvider: sp.tp}, payOp(unknown))
	key := "parked-" + newID()
	_, err := h.client.Run(t.Context(), opPay, h.req(key, `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))

	req := sp.one("pgsaga.request")
	require.Equal(t, codes.Error, req.Status().Code)
	require.Contains(t, req.Status().Description, "the provider cannot be asked")
	requireAttrs(t, req, map[attribute.Key]any{"pgsaga.outcome": "parked", "pgsaga.parked_reason": "outcome_unknown",
		"error.type": saga.CodeOperationParked})
	var parked []sdktrace.Event
	for _, ev := range req.Events() {
		if ev.Name == "pgsaga.parked" {
			parked = append(parked, ev)
		}
	}
	require.Len(t, parked, 1)
	require.Contains(t, parked[0].Attributes, attribute.String("pgsaga.parked_reason", "outcome_unknown"))
	call := sp.one("pgsaga.call")
	requireAttrs(t, call, map[attribute.Key]any{"pgsaga.call.outcome": "unknown", "error.type": "outcome_unknown"})
	require.Equal(t, codes.Error, call.Status().Code)

	res, err := h.client.Settle(t.Context(), h.scope, key, &saga.SettleParams{Outcome: phases.SettleSucceeded,
		Note: "the dashboard shows the charge", Reference: "ch_9", By: "alice"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status)
	settle := sp.one("pgsaga.settle")
	requireChildOf(t, settle, req.SpanContext())
	requireAttrs(t, settle, map[attribute.Key]any{"pgsaga.key": key, "pgsaga.settle.outcome": "succeeded",
		"pgsaga.settle.reference": "ch_9", "pgsaga.operator": "alice"})
	require.Equal(t, codes.Unset, settle.Status().Code)
}

// TestTracingOff: without a TracerProvider the engine makes no span, not even under a caller's
// recording span, and stores no trace context.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	sp := newSpans(t)
	h := newHarness(t, nil, payOp(charged))
	key := "off-" + newID()
	ctx, server := sp.start(t.Context(), "POST /pay")
	_, err := h.client.Run(ctx, opPay, h.req(key, `{}`))
	require.NoError(t, err)
	server.End()
	require.Len(t, sp.rec.Ended(), 1, "only the caller's span")
	require.Empty(t, sp.rec.Ended()[0].Events(), "no events on the caller's span either")
	require.Empty(t, storedTraceContext(h, key))
}
