package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// EventPaymentSucceeded is the outbox event emitted when a payment's charge succeeded.
const EventPaymentSucceeded = "payment.succeeded"

// PaymentSucceededHook returns a PaymentHook that emits a payment.succeeded outbox event (its
// payload is the Payment) in the transaction that records a succeeded payment: the event exists
// exactly when the result is committed, and a worker delivers it at least once. Its event id is
// derived from the payment id, so receivers see one id for one payment however it is delivered.
// Pass the worker's River client, or worker.NewInsertOnlyClient's in a process without one.
func PaymentSucceededHook(inserter worker.Inserter) PaymentHook {
	return func(ctx context.Context, tx pgx.Tx, tenant string, p *Payment) error {
		if p.Status != "succeeded" {
			return nil
		}
		payload, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return worker.EmitTx(ctx, tx, inserter, worker.Event{
			ID: EventPaymentSucceeded + ":" + p.ID, Type: EventPaymentSucceeded, Tenant: tenant, Payload: payload,
		})
	}
}

// WebhookOpts are optional settings for WebhookHandler.
type WebhookOpts struct {
	// Apply applies a newly received event's effect inside the transaction that records it in
	// the inbox, so the effect and the record commit together. Defaults to recording only.
	Apply func(ctx context.Context, tx pgx.Tx, source string, e *worker.Event) error
}

// maxWebhookBody caps a received event's body.
const maxWebhookBody = 1 << 20

// WebhookHandler receives events POSTed to /webhooks/{source} by a pgsaga worker (or any
// producer sending the X-Event-ID header and a JSON body) and applies each once: the event's id
// is recorded in pgsaga_inbox in the same transaction as its effect, so a redelivery (a lost
// acknowledgement, a retry after a 5xx) is acknowledged with 200 and "applied": false without
// applying it again. A real receiver also verifies the sender (a signature); this example does
// not.
func WebhookHandler(pool *pgxpool.Pool, opts *WebhookOpts) http.Handler {
	if opts == nil {
		opts = &WebhookOpts{}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		source, id := r.PathValue("source"), r.Header.Get("X-Event-ID")
		if source == "" || len(source) > 255 || id == "" || len(id) > 255 {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, "a source in the path and an X-Event-ID header (1-255 characters each) are required")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			saga.WriteError(w, http.StatusRequestEntityTooLarge, saga.CodeRequestTooLarge, "the event body is over 1 MiB")
			return
		}
		var e worker.Event
		if err != nil || json.Unmarshal(body, &e) != nil {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidJSON, "the event body is not a JSON event")
			return
		}
		if e.ID == "" {
			e.ID = id
		}
		if e.ID != id {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, "X-Event-ID does not match the event's id")
			return
		}
		if e.Type == "" {
			e.Type = r.Header.Get("X-Event-Type")
		}
		var fresh bool
		err = pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
			recorded, err := saga.RecordInboxTx(r.Context(), tx, source, id)
			if err != nil || !recorded {
				return err
			}
			fresh = true
			if opts.Apply != nil {
				return opts.Apply(r.Context(), tx, source, &e)
			}
			return nil
		})
		if err != nil {
			unavailable(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"event_id": id, "applied": fresh})
	})
}
