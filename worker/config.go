package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/saga"
)

// Config configures a Worker.
type Config struct {
	// Pool is the database holding pgsaga's and River's tables. Required.
	Pool *pgxpool.Pool
	// Client resumes keys; only keys of its operations are resumed by this worker. Required.
	Client *saga.Client
	// SweepInterval is how often this worker's sweep looks for due keys and enqueues their
	// resume jobs. Every worker sweeps, so a key whose process died is enqueued within about
	// one interval of its lease's end while any worker runs. Defaults to 1s.
	SweepInterval time.Duration
	// SweepBatchSize bounds how many due keys one sweep enqueues. Keys beyond it wait for the
	// next sweep. Defaults to 1000.
	SweepBatchSize int
	// ResumeConcurrency is how many keys this worker resumes at once. A resume holds a pool
	// connection only while an atomic phase runs, not during external calls, so this may well
	// exceed the pool size when calls are slow. Defaults to 32.
	ResumeConcurrency int
	// ResumeBatchSize is how many due keys one resume job takes (their leases in one
	// statement) and resumes at once; a worker runs ResumeConcurrency/ResumeBatchSize such jobs
	// at once. Batches spare River's per-job work (an insert, a fetch and a completion) on
	// every key. Defaults to 8.
	ResumeBatchSize int
	// WebhookURL receives every outbox event as a JSON POST with X-Event-ID and X-Event-Type
	// headers, signed with WebhookSecrets (Pgsaga-Signature, see SignWebhook); River retries a
	// delivery that does not get a 2xx. Defaults to "": events are marked delivered without a
	// POST.
	WebhookURL string
	// WebhookSecrets sign every delivery, one v1 signature each (two while rotating a secret).
	// Defaults to none: deliveries are unsigned, which receivers that check signatures refuse.
	WebhookSecrets [][]byte
	// HTTPClient delivers outbox events. Defaults to a client with a 10s timeout.
	HTTPClient *http.Client
	// OutboxConcurrency is how many events this worker delivers at once. Defaults to 4.
	OutboxConcurrency int
	// TombstoneRetention is how long, from its completion, a key GC deleted leaves a tombstone
	// that answers a retry of its request 410 (saga.KeyDeleteExpiredParams.TombstoneRetention).
	// Defaults to saga.DefaultTombstoneRetention (30 days).
	TombstoneRetention time.Duration
	// GCInterval is how often retention GC runs. Defaults to 1m.
	GCInterval time.Duration
	// GCBatchSize is how many keys one GC statement deletes. Defaults to 1000.
	GCBatchSize int
	// InboxRetention is how long GC keeps the ids of events already applied (pgsaga_inbox). It
	// must outlast every producer's redeliveries: an id deleted earlier lets a late duplicate be
	// applied again. Defaults to 30 days.
	InboxRetention time.Duration
	// Lister lists the charges of the payment provider the operations charge. When set, the
	// worker reconciles them every ReconcileInterval (package reconcile): the charges created in
	// the last ReconcileWindow that no key accounts for are stored in pgsaga_unmatched_charge,
	// which the console lists, and counted by pgsaga_unmatched_charges. Defaults to nil: no
	// reconciliation.
	Lister gateway.Lister
	// ReconcileInterval is how often the worker reconciles (with a Lister). Defaults to 10m.
	ReconcileInterval time.Duration
	// ReconcileWindow is how far back each reconciliation looks: longer than ReconcileInterval,
	// so that every charge is looked at by a few runs, and shorter than the retention of the
	// operations' completed keys (deleted with their journals, their charges would look
	// unmatched). Defaults to 1h.
	ReconcileWindow time.Duration
	// Registerer receives the worker's metrics and the key-state gauges (NewStateCollector).
	// Defaults to none.
	Registerer prometheus.Registerer
	// Logger receives the worker's and River's logs. River's periodic reports (its producers'
	// job counts every 5s, a maintenance pass that deleted or rescued jobs) come at debug, not
	// info; River's other lines keep their levels. Defaults to the client's logger.
	Logger *slog.Logger
	// TracerProvider receives a span per resume job and outbox delivery (River's otelriver,
	// river.work/<kind>); the resumes themselves are the client's pgsaga.resume spans. Defaults
	// to the client's (saga.Config.TracerProvider): none when the client traces nothing.
	TracerProvider trace.TracerProvider
	// PollOnly runs River in poll-only mode: it looks for new jobs every fetch interval (50ms
	// for resumes, 1s for outbox deliveries and maintenance) and for an expired leadership
	// every few seconds, instead of LISTENing for them. Set it when Pool reaches PostgreSQL
	// through a pooler in transaction pooling mode (PgBouncer's pool_mode=transaction), where
	// a LISTEN hears nothing: Start refuses a Pool that does not hear notifications without it.
	// River needs nothing else of a session: its advisory locks are transaction-scoped and its
	// leader election is a row with a lease. Defaults to false: River listens.
	PollOnly bool
}

// withDefaults returns a copy of the config with every unset field given its default.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.SweepInterval == 0 {
		out.SweepInterval = time.Second
	}
	if out.SweepBatchSize == 0 {
		out.SweepBatchSize = 1000
	}
	if out.ResumeConcurrency == 0 {
		out.ResumeConcurrency = 32
	}
	if out.ResumeBatchSize == 0 {
		out.ResumeBatchSize = 8
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if out.OutboxConcurrency == 0 {
		out.OutboxConcurrency = 4
	}
	if out.GCInterval == 0 {
		out.GCInterval = time.Minute
	}
	if out.InboxRetention == 0 {
		out.InboxRetention = 30 * 24 * time.Hour
	}
	if out.TombstoneRetention == 0 {
		out.TombstoneRetention = saga.DefaultTombstoneRetention
	}
	if out.GCBatchSize == 0 {
		out.GCBatchSize = 1000
	}
	if out.ReconcileInterval == 0 {
		out.ReconcileInterval = 10 * time.Minute
	}
	if out.ReconcileWindow == 0 {
		out.ReconcileWindow = time.Hour
	}
	if out.Logger == nil && out.Client != nil {
		out.Logger = out.Client.Config().Logger
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.TracerProvider == nil && out.Client != nil {
		out.TracerProvider = out.Client.Config().TracerProvider
	}
	return &out
}

func (c *Config) validate() error {
	switch {
	case c.Pool == nil:
		return errors.New("worker: Config.Pool is required")
	case c.Client == nil:
		return errors.New("worker: Config.Client is required")
	case c.SweepInterval < time.Millisecond:
		return fmt.Errorf("worker: Config.SweepInterval must be at least 1ms, got %s", c.SweepInterval)
	case c.SweepBatchSize < 1:
		return fmt.Errorf("worker: Config.SweepBatchSize must be at least 1, got %d", c.SweepBatchSize)
	case c.ResumeConcurrency < 1:
		return fmt.Errorf("worker: Config.ResumeConcurrency must be at least 1, got %d", c.ResumeConcurrency)
	case c.ResumeBatchSize < 1:
		return fmt.Errorf("worker: Config.ResumeBatchSize must be at least 1, got %d", c.ResumeBatchSize)
	case c.OutboxConcurrency < 1:
		return fmt.Errorf("worker: Config.OutboxConcurrency must be at least 1, got %d", c.OutboxConcurrency)
	case c.TombstoneRetention < 0:
		return fmt.Errorf("worker: Config.TombstoneRetention must not be negative, got %s", c.TombstoneRetention)
	case c.GCInterval < time.Second:
		return fmt.Errorf("worker: Config.GCInterval must be at least 1s, got %s", c.GCInterval)
	case c.InboxRetention < time.Hour:
		return fmt.Errorf("worker: Config.InboxRetention must be at least 1h, got %s", c.InboxRetention)
	case c.GCBatchSize < 1:
		return fmt.Errorf("worker: Config.GCBatchSize must be at least 1, got %d", c.GCBatchSize)
	case c.ReconcileInterval < time.Second:
		return fmt.Errorf("worker: Config.ReconcileInterval must be at least 1s, got %s", c.ReconcileInterval)
	case c.ReconcileWindow <= c.ReconcileInterval:
		return fmt.Errorf("worker: Config.ReconcileWindow (%s) must be longer than ReconcileInterval (%s): a charge between two runs would be looked at by none",
			c.ReconcileWindow, c.ReconcileInterval)
	}
	if c.WebhookURL != "" {
		if u, err := url.Parse(c.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("worker: Config.WebhookURL must be an http or https URL, got %q", c.WebhookURL)
		}
	}
	for i, secret := range c.WebhookSecrets {
		// A receiver refuses shorter secrets (VerifyWebhook's callers): every delivery would fail.
		if len(secret) < MinWebhookSecretLength {
			return fmt.Errorf("worker: Config.WebhookSecrets[%d] must be at least %d bytes, got %d", i, MinWebhookSecretLength, len(secret))
		}
	}
	return nil
}
