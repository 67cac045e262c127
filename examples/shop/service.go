package shop

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/examples/shop/schema"
	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// Operation names, as stored with each key.
const (
	OpPostStockCount = "post_stock_count"
	OpSubmitOrder    = "submit_order"
	OpShipOrder      = "ship_order"
)

// Config configures the service.
type Config struct {
	// Pool is the database, migrated with Migrations. Required.
	Pool *pgxpool.Pool
	// SMS sends the texts that tell customers their order shipped. Required: smssim.New gives
	// an in-process provider without keys and with inquiry.
	SMS sms.Provider
	// Partner receives a delivery for every shipped order (webhook.New over the partner's URL).
	// Required.
	Partner webhook.Partner
	// Outbox inserts the service's events (order.held, order.shipped) in the transaction of the
	// phase that causes them; any worker on the database delivers them. Defaults to a new
	// worker.NewOutbox().
	Outbox *worker.Outbox
	// Lease is the key lease. Defaults to saga's default (30s).
	Lease time.Duration
	// Logger receives the saga client's logs. Defaults to discarding them.
	Logger *slog.Logger
}

// Service is the shop's API: stock counts, orders re-validated at submission, and shipments
// that text the customer and notify a partner.
type Service struct {
	cfg    Config
	client *saga.Client
}

// Migrations returns the options that create pgsaga's, River's (the outbox's jobs) and the
// shop's tables.
func Migrations() *migrations.MigrateOpts {
	return &migrations.MigrateOpts{Lines: []migrations.Line{schema.Line()}}
}

// New builds the service and its saga client.
func New(cfg *Config) (*Service, error) {
	if cfg == nil || cfg.Pool == nil {
		return nil, errors.New("shop: Config.Pool is required")
	}
	if cfg.SMS == nil {
		return nil, errors.New("shop: Config.SMS is required")
	}
	if cfg.Partner == nil {
		return nil, errors.New("shop: Config.Partner is required")
	}
	s := &Service{cfg: *cfg}
	if s.cfg.Outbox == nil {
		outbox, err := worker.NewOutbox()
		if err != nil {
			return nil, err
		}
		s.cfg.Outbox = outbox
	}
	client, err := saga.NewClient(&saga.Config{
		DB:         cfg.Pool,
		Operations: s.Operations(),
		Lease:      cfg.Lease,
		Logger:     cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	s.client = client
	return s, nil
}

// Client is the saga client running the service's operations (a worker resumes with it).
func (s *Service) Client() *saga.Client { return s.client }

// Operations are the service's operations, for a saga client.
func (s *Service) Operations() []*phases.Operation {
	return []*phases.Operation{postStockCount(), s.submitOrder(), s.shipOrder()}
}

// Handler routes the API. Every route takes its tenant and actor from scope, which
// authenticates the request (saga.HeaderScope in tests and local experiments); a request scope
// refuses is answered 401 unauthenticated before anything is read or stored.
func (s *Service) Handler(scope saga.ScopeFunc) (http.Handler, error) {
	if scope == nil {
		return nil, errors.New("shop: Handler needs a ScopeFunc to authenticate requests")
	}
	mux := http.NewServeMux()
	opts := &saga.HandlerOpts{Scope: scope}
	for pattern, op := range map[string]string{
		"POST /locations/{location}/counts": OpPostStockCount,
		"POST /orders":                      OpSubmitOrder,
		"POST /orders/{id}/ship":            OpShipOrder,
	} {
		h, err := s.client.Handler(op, opts)
		if err != nil {
			return nil, err
		}
		mux.Handle(pattern, checkedPathValues(scope, h))
	}
	mux.Handle("PUT /products/{sku}", checkedPathValues(scope, saga.Authenticated(scope, s.putProduct)))
	mux.Handle("GET /orders/{id}", checkedPathValues(scope, saga.Authenticated(scope, s.getOrder)))
	return saga.RouteErrors(mux), nil
}
