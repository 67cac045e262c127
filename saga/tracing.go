package saga

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/phases"
)

// The engine's OpenTelemetry spans, when Config.TracerProvider is set:
//
//   - pgsaga.request: one per request that reaches the engine (Run, RunTx), a child of the
//     caller's span (the HTTP server's, with otelhttp).
//   - pgsaga.phase: one per atomic phase, with the recovery point it commits.
//   - pgsaga.call: one per external call attempt, with its attempt, outcome class, downstream
//     reference and the provider's id.
//   - pgsaga.compensate: one per compensation that runs.
//   - pgsaga.resume: an execution that continues an existing key (a retry's takeover, the
//     worker's, an operator's).
//   - pgsaga.settle: an operator's settlement of a parked key.
//
// The trace context of the request that first claimed a key is stored with the key (its W3C
// traceparent), so that the story of one payment stays together across crashes: a resume that
// no client waits for (the worker's, an operator's) and a settlement are children of that
// request's span, linked to the span they run under (a River job's); a retry's takeover is a
// child of the retry's request and links to the first request. Parking, scheduling a retry and
// taking a key over are events on the execution's span.
//
// Off (no TracerProvider), the client's tracer is nil and every helper here returns at once:
// the request path allocates nothing for tracing (TestAllocationBudgets holds the same budgets).

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/pgsaga/pgsaga/saga"

// Span names.
const (
	spanRequest    = "pgsaga.request"
	spanPhase      = "pgsaga.phase"
	spanCall       = "pgsaga.call"
	spanCompensate = "pgsaga.compensate"
	spanResume     = "pgsaga.resume"
	spanSettle     = "pgsaga.settle"
)

// Attributes of the engine's spans.
const (
	attrOperation     = attribute.Key("pgsaga.operation")
	attrTenant        = attribute.Key("pgsaga.tenant")
	attrActor         = attribute.Key("pgsaga.actor")
	attrKey           = attribute.Key("pgsaga.key")
	attrRecoveryPoint = attribute.Key("pgsaga.recovery_point")
	attrStep          = attribute.Key("pgsaga.step")
	attrAttempt       = attribute.Key("pgsaga.attempt")
	// attrOutcome is how a request was answered (RequestOutcome), or how a resume ended.
	attrOutcome = attribute.Key("pgsaga.outcome")
	// attrResumedBy says who continues a key: retry, worker or operator.
	attrResumedBy = attribute.Key("pgsaga.resumed_by")
	// attrOperator is the operator named in the key's history (Resume's By, Settle's By).
	attrOperator      = attribute.Key("pgsaga.operator")
	attrCallOutcome   = attribute.Key("pgsaga.call.outcome")
	attrCallReference = attribute.Key("pgsaga.call.reference")
	attrCallProvider  = attribute.Key("pgsaga.call.provider_id")
	attrParkedReason  = attribute.Key("pgsaga.parked_reason")
	attrRetryIn       = attribute.Key("pgsaga.retry_in_ms")
	attrSettleOutcome = attribute.Key("pgsaga.settle.outcome")
	attrSettleRef     = attribute.Key("pgsaga.settle.reference")
)

// Events on an execution's span.
const (
	eventParked   = "pgsaga.parked"
	eventRetry    = "pgsaga.retry_scheduled"
	eventTakeover = "pgsaga.takeover"
)

// Who continues a key (attrResumedBy).
const (
	resumedByRetry    = "retry"
	resumedByWorker   = "worker"
	resumedByOperator = "operator"
)

// tracer starts the engine's spans. A nil *tracer is tracing off.
type tracer struct{ t trace.Tracer }

func newTracer(tp trace.TracerProvider) *tracer {
	if tp == nil {
		return nil
	}
	return &tracer{t: tp.Tracer(tracerName)}
}

// scopeAttrs are the attributes that name a key.
func scopeAttrs(operation string, scope Scope, key string) []attribute.KeyValue {
	return []attribute.KeyValue{attrOperation.String(operation), attrTenant.String(scope.Tenant),
		attrActor.String(scope.Actor), attrKey.String(key)}
}

// traceRequest starts the request's span (e.span) as a child of ctx's.
func (e *execution) traceRequest(ctx context.Context) context.Context {
	if e.c.tr == nil {
		return ctx
	}
	ctx, e.span = e.c.tr.t.Start(ctx, spanRequest, trace.WithAttributes(scopeAttrs(e.op.Name, e.req.Scope, e.req.Key)...))
	return ctx
}

// claimTraceContext is the trace context a claim by this request stores: its span's W3C
// traceparent, "" when the request is not traced.
func (e *execution) claimTraceContext() string {
	if e.span == nil {
		return ""
	}
	return traceparent(e.span.SpanContext())
}

// traced ends the request's span with its answer, and passes the answer on.
func (e *execution) traced(res *Result, err error) (*Result, error) {
	if e.span != nil {
		endExecution(e.span, res, err)
	}
	return res, err
}

// traceResume starts the span of an execution that continues key t. A resume no client waits
// for is a child of the request that first claimed the key, linked to ctx's span; a retry's is
// a child of ctx's (its request) linked to the first request.
func (e *execution) traceResume(ctx context.Context, t *takenKey) (context.Context, trace.Span) {
	if e.c.tr == nil {
		return ctx, nil
	}
	by := resumedByRetry
	switch e.by {
	case byOperator:
		by = resumedByOperator
	case byWorker:
		by = resumedByWorker
	}
	attrs := append(scopeAttrs(t.Operation, t.Scope, t.Key.Key), attrResumedBy.String(by),
		attrAttempt.Int(t.Attempts), attrRecoveryPoint.String(t.RecoveryPoint))
	if e.operator != "" {
		attrs = append(attrs, attrOperator.String(e.operator))
	}
	ctx, opts := e.c.tr.followClaim(ctx, t.traceContext, e.by != byClient)
	return e.c.tr.t.Start(ctx, spanResume, append(opts, trace.WithAttributes(attrs...))...)
}

// followClaim returns the context and options that tie a span to the request that claimed a
// key (stored, its traceparent): as its child (asChild, when no client waits) with a link to
// ctx's span, or as ctx's child with a link to the request.
func (t *tracer) followClaim(ctx context.Context, stored string, asChild bool) (context.Context, []trace.SpanStartOption) {
	claimed := parseTraceparent(stored)
	current := trace.SpanContextFromContext(ctx)
	switch {
	case !claimed.IsValid():
		return ctx, nil
	case asChild && current.IsValid():
		return trace.ContextWithRemoteSpanContext(ctx, claimed), []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: current})}
	case asChild:
		return trace.ContextWithRemoteSpanContext(ctx, claimed), nil
	}
	return ctx, []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: claimed})}
}

// endExecution ends a request's or a resume's span with how it was answered (requestOutcome):
// error.type is the code the HTTP handler answers, and the status is Error for a failure of the
// service (a 5xx: unavailable, parked, an error), not for a refused request.
func endExecution(span trace.Span, res *Result, err error) {
	outcome := requestOutcome(res, err)
	span.SetAttributes(attrOutcome.String(string(outcome)))
	if err != nil {
		code, failed := outcomeCode(outcome)
		if errors.Is(err, ErrLeaseLost) {
			code = "lease_lost"
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(code))
		if failed {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// outcomeCode is the error code the HTTP handler answers for outcome, and whether it is a
// failure of the service rather than of the request.
func outcomeCode(outcome RequestOutcome) (code string, failed bool) {
	switch outcome {
	case outcomeMismatch:
		return CodeKeyReused, false
	case outcomeInProgress:
		return codeRequestInProgress, false
	case outcomeRejected:
		return CodeInvalidRequest, false
	case outcomeParked:
		return CodeOperationParked, true
	case outcomeUnavailable:
		return CodeTemporarilyUnavailable, true
	}
	return CodeInternal, true
}

// tracePhase starts the span of atomic phase name, which commits recovery point name.
func (e *execution) tracePhase(ctx context.Context, name string) (context.Context, trace.Span) {
	if e.c.tr == nil {
		return ctx, nil
	}
	return e.c.tr.t.Start(ctx, spanPhase, trace.WithAttributes(attrRecoveryPoint.String(name), attrAttempt.Int(e.h.attempt)))
}

// traceCompensate starts the span of the compensation of phase name.
func (e *execution) traceCompensate(ctx context.Context, name string) (context.Context, trace.Span) {
	if e.c.tr == nil {
		return ctx, nil
	}
	return e.c.tr.t.Start(ctx, spanCompensate, trace.WithAttributes(attrStep.String(name), attrAttempt.Int(e.h.attempt)))
}

// traceCall starts the span of an attempt of call step, sent under downstream reference ref.
func (e *execution) traceCall(ctx context.Context, step, ref string) (context.Context, trace.Span) {
	if e.c.tr == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{attrStep.String(step), attrAttempt.Int(e.h.attempt)}
	if ref != "" {
		attrs = append(attrs, attrCallReference.String(ref))
	}
	return e.c.tr.t.Start(ctx, spanCall, trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindClient))
}

// endCall ends a call's span with the outcome class journaled for it (e.done).
func (e *execution) endCall(span trace.Span, err error) {
	if span == nil {
		return
	}
	if d := e.done; d != nil {
		span.SetAttributes(attrCallOutcome.String(string(d.outcome)))
		if d.providerID != "" {
			span.SetAttributes(attrCallProvider.String(d.providerID))
		}
	}
	endSpan(span, err)
}

// endSpan ends span, marking it failed with err's type when err is not nil. A first phase
// stopped because the key is stored (a retry's) did not fail: it says so in pgsaga.outcome. A
// nil span is tracing off.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	switch {
	case errors.Is(err, errKeyStored):
		span.SetAttributes(attrOutcome.String("key_stored"))
	case err != nil:
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// errorType names err for error.type: the engine's conditions by name, a step's by its class.
func errorType(err error) string {
	switch {
	case errors.Is(err, errDuplicate):
		return "duplicate"
	case errors.Is(err, errTombstoned):
		return "key_expired"
	case errors.Is(err, ErrLeaseLost):
		return "lease_lost"
	case errors.Is(err, errLeaseEnding):
		return "lease_ending"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case phases.IsOutcomeUnknown(err):
		return "outcome_unknown"
	case phases.IsRetryable(err):
		return "retryable"
	}
	if reject, ok := rejected(err); ok {
		return reject.code
	}
	return "permanent"
}

// traceParked records on ctx's execution span that the key was parked, and why.
func (e *execution) traceParked(ctx context.Context, reason ParkedReason, msg string) {
	if e.c.tr == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.AddEvent(eventParked, trace.WithAttributes(attrParkedReason.String(string(reason)),
		attribute.String("message", msg)))
	span.SetAttributes(attrParkedReason.String(string(reason)))
}

// traceRetry records on ctx's execution span that the key's next attempt was scheduled.
func (e *execution) traceRetry(ctx context.Context, delay time.Duration, err error) {
	if e.c.tr == nil {
		return
	}
	trace.SpanFromContext(ctx).AddEvent(eventRetry, trace.WithAttributes(attrRetryIn.Int64(delay.Milliseconds()),
		attribute.String("message", err.Error())))
}

// traceTakeover records on ctx's request span that the request takes an expired key over.
func (e *execution) traceTakeover(ctx context.Context, t *takenKey) {
	if e.c.tr == nil {
		return
	}
	trace.SpanFromContext(ctx).AddEvent(eventTakeover, trace.WithAttributes(attrRecoveryPoint.String(t.RecoveryPoint),
		attrAttempt.Int(t.Attempts)))
}

// traceSettle starts the span of an operator's settlement of key k, claimed under stored.
func (c *Client) traceSettle(ctx context.Context, k *Key, stored string, p *SettleParams) (context.Context, trace.Span) {
	if c.tr == nil {
		return ctx, nil
	}
	attrs := append(scopeAttrs(k.Operation, k.Scope, k.Key), attrSettleOutcome.String(string(p.Outcome)),
		attrOperator.String(p.By), attrRecoveryPoint.String(k.RecoveryPoint))
	if p.Reference != "" {
		attrs = append(attrs, attrSettleRef.String(p.Reference))
	}
	ctx, opts := c.tr.followClaim(ctx, stored, true)
	return c.tr.t.Start(ctx, spanSettle, append(opts, trace.WithAttributes(attrs...))...)
}

// traceparent is sc as a W3C traceparent, "" when it is not valid.
func traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier[traceparentHeader]
}

// parseTraceparent is the span context a stored traceparent names; not valid for "" or garbage.
func parseTraceparent(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{traceparentHeader: s})
	return trace.SpanContextFromContext(ctx)
}

const traceparentHeader = "traceparent"
