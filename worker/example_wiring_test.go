package worker_test

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// A whole service's main, wired in the one order that has no cycle:
//
//  1. the pool;
//  2. the migrations: pgsaga's and River's tables, then the service's own;
//  3. the outbox, which needs nothing but the transactions its events ride in;
//  4. the operations, which emit events through the outbox inside their phases;
//  5. the saga client, built from the operations;
//  6. the worker, built from the client: it resumes the client's operations whose process
//     died, and delivers the outbox's events;
//  7. the HTTP server, whose handlers run the client's operations.
//
// Shutdown goes the other way. The server stops taking requests and lets those under way
// finish; then the worker stops, its running resumes finishing and its queued jobs left to the
// other workers; then the pool closes. A process killed instead leaves leases that expire, and
// any worker finishes its keys.
func Example_wiring() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, logger); err != nil {
		logger.Error("shop stopped", "error", err)
		os.Exit(1)
	}
}

// shopMigrations are the service's own tables, applied after pgsaga's and River's (usually an
// embed.FS of a migrations directory).
var shopMigrations = fstest.MapFS{
	"001_orders.up.sql": {Data: []byte(`CREATE TABLE orders (
		id text PRIMARY KEY, status text NOT NULL DEFAULT 'paid')`)},
	"001_orders.down.sql": {Data: []byte(`DROP TABLE orders`)},
}

func run(ctx context.Context, logger *slog.Logger) error {
	// 1. The pool.
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer pool.Close()

	// 2. The migrations.
	if _, err := migrations.Migrate(ctx, pool, &migrations.MigrateOpts{
		Lines: []migrations.Line{{Name: "shop", FS: shopMigrations}},
	}); err != nil {
		return err
	}

	// 3. The outbox.
	outbox, err := worker.NewOutbox()
	if err != nil {
		return err
	}

	// 4. The operations.
	ship := shipOrder(outbox)

	// 5. The saga client.
	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{ship}, Logger: logger})
	if err != nil {
		return err
	}

	// 6. The worker, started on a context that outlives the signal: Stop ends it cleanly.
	cfg := &worker.Config{Pool: pool, Client: client, WebhookURL: os.Getenv("WEBHOOK_URL")}
	if secret := os.Getenv("WEBHOOK_SECRET"); secret != "" {
		cfg.WebhookSecrets = [][]byte{[]byte(secret)}
	}
	w, err := worker.New(cfg)
	if err != nil {
		return err
	}
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}

	// 7. The HTTP server.
	handler, err := client.Handler(ship.Name, &saga.HandlerOpts{Scope: authenticate(os.Getenv("SHOP_PASSWORD"))})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /shipments", handler)
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()

	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}

	// Shutdown, in the reverse order. The pool closes last (deferred above).
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(shutdown), w.Stop(shutdown))
}

// shipOrder marks a paid order shipped and emits order.shipped in the same transaction: the
// event exists exactly when the order is shipped, and is delivered at least once.
func shipOrder(outbox *worker.Outbox) *phases.Operation {
	return &phases.Operation{Name: "ship_order", Steps: []phases.Step{
		phases.Atomic("shipped", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			var in struct {
				OrderID string `json:"order_id"`
			}
			if err := run.Decode(&in); err != nil || in.OrderID == "" {
				return phases.Reject(http.StatusBadRequest, "invalid_request", "order_id is required")
			}
			tag, err := tx.Exec(ctx, `UPDATE orders SET status = 'shipped' WHERE id = $1 AND status = 'paid'`, in.OrderID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return phases.Reject(http.StatusConflict, "order_not_paid", "no paid order "+in.OrderID)
			}
			payload, err := json.Marshal(in)
			if err != nil {
				return err
			}
			// The event's id derives from the order: a second emission of the same fact
			// would carry the same id, which receivers de-duplicate.
			if err := outbox.EmitTx(ctx, tx, worker.Event{ID: "order.shipped:" + in.OrderID, Type: "order.shipped",
				Tenant: run.Tenant(), Payload: payload}); err != nil {
				return err
			}
			return run.Respond(http.StatusOK, map[string]string{"order_id": in.OrderID, "status": "shipped"})
		}),
	}}
}

// authenticate names the caller from credentials it checks, never from the body or an
// unchecked header. One account here; a service checks its own tokens or sessions.
func authenticate(password string) saga.ScopeFunc {
	return func(r *http.Request) (saga.Scope, error) {
		user, given, ok := r.BasicAuth()
		if !ok || password == "" || subtle.ConstantTimeCompare([]byte(given), []byte(password)) != 1 {
			return saga.Scope{}, errors.New("unknown credentials")
		}
		return saga.Scope{Tenant: "shop", Actor: user}, nil
	}
}
