package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
)

// Event is one outbox event: something that happened, to be delivered at least once. Receivers
// de-duplicate by ID (saga.RecordInboxTx).
type Event struct {
	// ID identifies the event to receivers. Defaults to a new UUIDv7 (time-ordered). Give a
	// deterministic one (derived from the business id) when the same fact could be emitted
	// twice.
	ID string `json:"id"`
	// Type names what happened, e.g. "payment.succeeded". Required.
	Type string `json:"type"`
	// Tenant the event belongs to, if any.
	Tenant string `json:"tenant,omitempty"`
	// Payload is the event's JSON body. Defaults to null.
	Payload json.RawMessage `json:"payload"`
}

// Outbox inserts outbox events in the caller's transaction, for any worker to deliver. It needs
// no pool and no worker, only the transaction each event rides in, so it comes first in a
// process's wiring: pool, migrations, outbox, the operations that emit through it, the saga
// client built from them, the worker built from that client, the HTTP server (see the package
// doc). One Outbox serves every operation and goroutine.
type Outbox struct {
	river *river.Client[pgx.Tx]
}

// NewOutbox returns an outbox. Its events go to River's job table in the schema the
// transactions given to EmitTx use, where the workers (any process, any number) deliver them.
func NewOutbox() (*Outbox, error) {
	// A River client without a pool: it cannot start, and inserts only in a transaction it is
	// given, which is all an outbox does.
	c, err := river.NewClient(riverpgxv5.New(nil), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("error creating the outbox: %w", err)
	}
	return &Outbox{river: c}, nil
}

// outboxArgs is the River job that delivers one event.
type outboxArgs struct {
	Event Event `json:"event"`
}

// Kind is the River job kind.
func (outboxArgs) Kind() string { return "pgsaga_outbox" }

// InsertOpts puts deliveries on their own queue.
func (outboxArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queueOutbox} }

// EmitTx inserts e into the outbox in the caller's transaction: the event exists exactly when the
// transaction that caused it commits, and is then delivered at least once by a worker. Call it
// from the phase that makes the change the event reports.
func (o *Outbox) EmitTx(ctx context.Context, tx pgx.Tx, e Event) error {
	if e.Type == "" {
		return errors.New("worker: Event.Type is required")
	}
	if e.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("error making event id: %w", err)
		}
		e.ID = id.String()
	}
	if len(e.ID) > 255 {
		return fmt.Errorf("worker: Event.ID must be at most 255 characters, got %d", len(e.ID))
	}
	if len(e.Payload) == 0 {
		e.Payload = json.RawMessage("null")
	} else if !json.Valid(e.Payload) {
		return fmt.Errorf("worker: Event.Payload of %q is not valid JSON", e.Type)
	}
	if _, err := o.river.InsertTx(ctx, tx, outboxArgs{Event: e}, nil); err != nil {
		return fmt.Errorf("error inserting outbox event %s: %w", e.Type, err)
	}
	return nil
}

// NewInsertOnlyClient returns a River client on pool that inserts jobs and works none: for
// River's own insert and read calls outside a transaction (riverui, say). For outbox events,
// NewOutbox needs no pool.
func NewInsertOnlyClient(pool *pgxpool.Pool) (*river.Client[pgx.Tx], error) {
	if pool == nil {
		return nil, errors.New("worker: NewInsertOnlyClient needs a pool")
	}
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	return c, nil
}

// outboxWorker delivers one event per job.
type outboxWorker struct {
	river.WorkerDefaults[outboxArgs]
	w *Worker
}

// Middleware traces the delivery when tracing is on.
func (o *outboxWorker) Middleware(*rivertype.JobRow) []rivertype.WorkerMiddleware { return o.w.traced }

func (o *outboxWorker) Work(ctx context.Context, job *river.Job[outboxArgs]) error {
	err := o.w.deliver(ctx, &job.Args.Event)
	o.w.metrics.delivery(err)
	return err
}

func (w *Worker) deliver(ctx context.Context, e *Event) error {
	if w.cfg.WebhookURL == "" {
		return nil
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("error encoding event %s: %w", e.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("error building delivery of event %s: %w", e.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Event-ID", e.ID)
	req.Header.Set("X-Event-Type", e.Type)
	if len(w.cfg.WebhookSecrets) > 0 {
		req.Header.Set(HeaderWebhookSignature, SignWebhook(time.Now(), body, w.cfg.WebhookSecrets...))
	}
	resp, err := w.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("error delivering event %s: %w", e.ID, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("error delivering event %s: receiver answered %s", e.ID, resp.Status)
	}
	return nil
}
