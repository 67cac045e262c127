// Package payments is pgsaga's reference service: invoices paid through a payment gateway, and
// orders completed into sales. docs/api/payments.yaml describes its HTTP API; the pgsaga binary serves it.
//
// Invoices, orders and order completion are single-transaction operations: the claim of the
// key, the effect and the stored response commit together. Payments are phased: a transaction
// creates the payment row (checking the balance under a lock), the gateway is charged outside
// any transaction with the derived key payment:<id>, and a second transaction records the result.
package payments

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/examples/payments/schema"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Operation names, as stored with each key.
const (
	OpCreateInvoice = "create_invoice"
	OpCreatePayment = "create_payment"
	OpCreateOrder   = "create_order"
	OpCompleteOrder = "complete_order"
)

// Config configures the service.
type Config struct {
	// Pool is the database, migrated with Migrations. Required.
	Pool *pgxpool.Pool
	// Gateway charges payments. Required.
	Gateway gateway.Gateway
	// Lease is the key lease. Defaults to saga's default (30s).
	Lease time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Observer receives the saga client's metrics (saga.Config.Observer; sagaprom.NewObserver
	// feeds Prometheus). Defaults to none.
	Observer saga.Observer
	// PaymentHooks run inside the phase transaction that records a payment's result (the
	// worker's outbox hooks in here). Defaults to none.
	PaymentHooks []PaymentHook
	// GatewayRetries bounds in-process retries of one charge before the request answers 503.
	// Defaults to gateway.Execute's default.
	GatewayRetries uint64
	// WebhookSecrets are the webhook senders' secrets, by source (the {source} of
	// POST /webhooks/{source}): a delivery reaches the inbox only when its Pgsaga-Signature
	// verifies with its source's secret (see WebhookHandler). Each source needs its own secret of
	// at least worker.MinWebhookSecretLength bytes, so that no sender can sign for another. They come
	// from the caller (pgsaga serve reads them from its environment). Defaults to none: every webhook
	// is refused.
	WebhookSecrets map[string][]byte
	// WebhookTolerance is how far a webhook signature's timestamp may be from now; older
	// deliveries are refused as replays. Defaults to worker.DefaultWebhookTolerance (5 minutes).
	WebhookTolerance time.Duration
	// WebhookRefused is told of every webhook delivery refused for its sender (WebhookOpts.Refused).
	// Defaults to none.
	WebhookRefused func(r *http.Request, code string)
	// TracerProvider receives the saga client's spans (saga.Config.TracerProvider). Defaults to
	// none: no spans.
	TracerProvider trace.TracerProvider
	// TransactionPooling declares that Pool goes through a pooler in transaction pooling mode
	// (saga.Config.TransactionPooling). Defaults to false.
	TransactionPooling bool
	// ListenDB is where the saga client's bounded waits listen (saga.Config.ListenDB).
	// Defaults to Pool, or with TransactionPooling to none.
	ListenDB *pgxpool.Pool
}

// Service is the example payments API.
type Service struct {
	cfg    *Config
	client *saga.Client
}

// Migrations returns the options that create pgsaga's, River's and this service's tables.
func Migrations() *migrations.MigrateOpts {
	return &migrations.MigrateOpts{Lines: []migrations.Line{schema.Line()}}
}

// New builds the service and its saga client.
func New(cfg *Config) (*Service, error) {
	if cfg == nil || cfg.Pool == nil {
		return nil, errors.New("payments: Config.Pool is required")
	}
	if cfg.Gateway == nil {
		return nil, errors.New("payments: Config.Gateway is required")
	}
	if err := checkWebhookSecrets(cfg.WebhookSecrets); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg}
	client, err := saga.NewClient(&saga.Config{
		DB:                 cfg.Pool,
		Operations:         s.Operations(),
		Lease:              cfg.Lease,
		Logger:             cfg.Logger,
		Observer:           cfg.Observer,
		TracerProvider:     cfg.TracerProvider,
		TransactionPooling: cfg.TransactionPooling,
		ListenDB:           cfg.ListenDB,
	})
	if err != nil {
		return nil, err
	}
	s.client = client
	return s, nil
}

// Client is the saga client running the service's operations (the worker resumes with it).
func (s *Service) Client() *saga.Client { return s.client }

// Operations are the service's operations, for a saga client.
func (s *Service) Operations() []*phases.Operation {
	return []*phases.Operation{
		createInvoice(),
		s.createPayment(),
		createOrder(),
		completeOrder(),
	}
}

// Handler routes the API. Every route but the webhooks (which verify their sender's signature)
// takes its tenant and actor from scope, which authenticates the request: `pgsaga serve` gives
// the request's API key (Authorization: Bearer), a test may give saga.HeaderScope. A request scope
// refuses is answered 401 unauthenticated before anything is read or stored.
func (s *Service) Handler(scope saga.ScopeFunc) (http.Handler, error) {
	if scope == nil {
		return nil, errors.New("payments: Handler needs a ScopeFunc to authenticate requests")
	}
	mux := http.NewServeMux()
	opts := &saga.HandlerOpts{Scope: scope}
	for pattern, op := range map[string]string{
		"POST /invoices":             OpCreateInvoice,
		"POST /payments":             OpCreatePayment,
		"POST /orders":               OpCreateOrder,
		"POST /orders/{id}/complete": OpCompleteOrder,
	} {
		h, err := s.client.Handler(op, opts)
		if err != nil {
			return nil, err
		}
		mux.Handle(pattern, storablePath(scope, h))
	}
	mux.Handle("GET /invoices/{id}", saga.Authenticated(scope, s.getInvoice))
	mux.Handle("GET /payments", saga.Authenticated(scope, s.listPayments))
	mux.Handle("GET /sales", saga.Authenticated(scope, s.listSales))
	mux.Handle("POST /webhooks/{source}", WebhookHandler(s.cfg.Pool, &WebhookOpts{Secrets: s.cfg.WebhookSecrets,
		Tolerance: s.cfg.WebhookTolerance, Refused: s.cfg.WebhookRefused, Logger: s.cfg.Logger}))
	return saga.RouteErrors(mux), nil
}

// WebhookSender is the source of a request to the service's webhook receiver whose signature
// verifies over body, its whole body, or "" for any other request (see the function
// WebhookSender): a server's admission can count a verified delivery against its source.
func (s *Service) WebhookSender(r *http.Request, body []byte) string {
	return WebhookSender(r, body, s.cfg.WebhookSecrets, s.cfg.WebhookTolerance)
}
