package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
// The outbox (worker.NewOutbox) needs no worker, so the hook can be built before the saga client
// and the worker.
func PaymentSucceededHook(outbox *worker.Outbox) PaymentHook {
	return func(ctx context.Context, tx pgx.Tx, tenant string, p *Payment) error {
		if p.Status != "succeeded" {
			return nil
		}
		payload, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return outbox.EmitTx(ctx, tx, worker.Event{
			ID: EventPaymentSucceeded + ":" + p.ID, Type: EventPaymentSucceeded, Tenant: tenant, Payload: payload,
		})
	}
}

// WebhookOpts are the settings of WebhookHandler.
type WebhookOpts struct {
	// Secrets are the senders' secrets by source (the {source} of POST /webhooks/{source}); each
	// source needs its own (see Config.WebhookSecrets). Defaults to none: every webhook is
	// refused.
	Secrets map[string][]byte
	// Tolerance is how far a signature's timestamp may be from now. Defaults to
	// worker.DefaultWebhookTolerance (5 minutes).
	Tolerance time.Duration
	// Apply applies a newly received event's effect inside the transaction that records it in
	// the inbox, so the effect and the record commit together. source is the authenticated
	// source. Defaults to recording only.
	Apply func(ctx context.Context, tx pgx.Tx, source string, e *worker.Event) error
	// Refused is told of every delivery refused because its sender is not authenticated (401),
	// with the refusal's code (CodeUnknownWebhookSource, CodeSignatureMissing,
	// CodeInvalidSignature or CodeSignatureExpired): to count and log guessing. Defaults to none.
	Refused func(r *http.Request, code string)
	// Logger receives the receiver's errors (the database did not answer), with the request's
	// context, never an event's body. Defaults to discarding.
	Logger *slog.Logger
}

// Error codes of the webhook receiver's refusals of a sender, stable for senders; each answers
// 401.
const (
	CodeUnknownWebhookSource = "unknown_webhook_source"
	CodeSignatureMissing     = "signature_missing"
	CodeInvalidSignature     = "invalid_signature"
	CodeSignatureExpired     = "signature_expired"
)

// maxWebhookBody caps a received event's body.
const maxWebhookBody = 1 << 20

// maxEventID is the longest event id the inbox keeps, in bytes.
const maxEventID = 255

// WebhookHandler receives events POSTed to /webhooks/{source} by a pgsaga worker or a provider
// and applies each once.
//
// Nothing reaches the inbox before the sender is authenticated: the Pgsaga-Signature header
// must carry an HMAC-SHA256 of the raw body under the source's secret, made within the
// tolerance (see worker.SignWebhook); otherwise 401 with unknown_webhook_source, signature_missing,
// invalid_signature or signature_expired. The event's id and type are read from the signed
// body (an X-Event-ID header, unsigned, must agree with it or the delivery is refused). An id
// must be 1-255 bytes of valid UTF-8 without control characters (400 invalid_event_id
// otherwise): invalid UTF-8 would reach the inbox as U+FFFD, so two ids that differ only there
// would be one event, and the second silently skipped; for that reason an id holding U+FFFD is
// refused too.
//
// The event is recorded in pgsaga_inbox under (source, id) in the same transaction as its
// effect, so a redelivery (a lost acknowledgement, a retry after a 5xx, a captured delivery
// replayed within the tolerance) is acknowledged with 200 and "applied": false without being
// applied again. The source is the one whose secret verified, never a value from the body, so a
// sender cannot record an id under another source and pre-empt that source's event.
func WebhookHandler(pool *pgxpool.Pool, opts *WebhookOpts) http.Handler {
	if opts == nil {
		opts = &WebhookOpts{}
	}
	tolerance := opts.Tolerance
	if tolerance <= 0 {
		tolerance = worker.DefaultWebhookTolerance
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	refuse := func(w http.ResponseWriter, r *http.Request, code, message string) {
		if opts.Refused != nil {
			opts.Refused(r, code)
		}
		saga.WriteError(w, http.StatusUnauthorized, code, message)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		source := r.PathValue("source")
		secret, known := opts.Secrets[source]
		if !known {
			refuse(w, r, CodeUnknownWebhookSource, "no webhook secret is configured for this source")
			return
		}
		sig, code, err := readSignature(r, tolerance)
		if err != nil {
			refuse(w, r, code, err.Error())
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			saga.WriteError(w, http.StatusRequestEntityTooLarge, saga.CodeRequestTooLarge, "the event body is over 1 MiB")
			return
		}
		if err != nil {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidJSON, "error reading the event body")
			return
		}
		if err := sig.Verify(body, secret); err != nil {
			refuse(w, r, signatureCode(err), err.Error())
			return
		}
		var e worker.Event
		if json.Unmarshal(body, &e) != nil {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidJSON, "the event body is not a JSON event")
			return
		}
		if e.ID == "" || len(e.ID) > maxEventID {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, "the event needs an id of 1-255 characters")
			return
		}
		if !validEventID(e.ID) {
			saga.WriteError(w, http.StatusBadRequest, CodeInvalidEventID,
				"the event's id must be valid UTF-8 without control characters")
			return
		}
		if id := r.Header.Get("X-Event-ID"); id != "" && id != e.ID {
			saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, "X-Event-ID does not match the signed event's id")
			return
		}
		var fresh bool
		err = pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
			recorded, err := saga.RecordInboxTx(r.Context(), tx, source, e.ID)
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
			logger.ErrorContext(r.Context(), "webhook: recording the event", "source", source, "error", err)
			unavailable(w)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"event_id": e.ID, "applied": fresh})
	})
}

// WebhookSender is the source of a delivery to POST /webhooks/{source} that is authenticated:
// its signature verifies over body, its whole body, with the source's secret in secrets, within
// tolerance (worker.DefaultWebhookTolerance when 0). Any other request is "". It reads nothing
// but its arguments (and r's method, path and headers), for a server that admits a request
// before handing it to WebhookHandler: serve counts a verified delivery against its source's
// share of the slots.
func WebhookSender(r *http.Request, body []byte, secrets map[string][]byte, tolerance time.Duration) string {
	if r.Method != http.MethodPost {
		return ""
	}
	source, ok := strings.CutPrefix(r.URL.Path, "/webhooks/")
	if !ok || source == "" || strings.Contains(source, "/") {
		return ""
	}
	secret, known := secrets[source]
	if !known {
		return ""
	}
	if tolerance <= 0 {
		tolerance = worker.DefaultWebhookTolerance
	}
	sig, _, err := readSignature(r, tolerance)
	if err != nil || sig.Verify(body, secret) != nil {
		return ""
	}
	return source
}

// readSignature reads r's one Pgsaga-Signature header, checking its form and its age; the code
// names a refusal.
func readSignature(r *http.Request, tolerance time.Duration) (*worker.WebhookSignature, string, error) {
	header := r.Header.Values(worker.HeaderWebhookSignature)
	switch {
	case len(header) > 1:
		return nil, CodeInvalidSignature, worker.ErrWebhookSignatureInvalid
	case len(header) == 0 || strings.TrimSpace(header[0]) == "":
		return nil, CodeSignatureMissing, errors.New("the webhook has no " + worker.HeaderWebhookSignature + " header")
	}
	sig, err := worker.ReadWebhookSignature(header[0], time.Now(), tolerance)
	if err != nil {
		return nil, signatureCode(err), err
	}
	return sig, "", nil
}

func signatureCode(err error) string {
	if errors.Is(err, worker.ErrWebhookSignatureExpired) {
		return CodeSignatureExpired
	}
	return CodeInvalidSignature
}

// validEventID reports whether id, as decoded from JSON, can be recorded as itself: valid
// UTF-8, no control character (NUL would be refused by the database for ever), and no U+FFFD,
// which is what decoding made of invalid UTF-8 or a lone surrogate escape.
func validEventID(id string) bool {
	if !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return false
		}
	}
	return true
}
