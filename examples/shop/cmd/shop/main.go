// Command shop runs the shop example as a service: a whole process wired, from the pool to the
// shutdown order.
//
//	go run ./examples/shop/cmd/shop --database-url postgres://localhost/shop
//
// It migrates the database (pgsaga's, River's and the shop's tables), builds the outbox, the
// service whose operations emit through it, and a worker from the service's saga client, in
// the same process: it resumes keys whose execution died, delivers the outbox's events (to
// --events-url, when given) and deletes expired keys. Then it serves the shop's API (package
// shop) on --listen. Texts go to the in-process SMS simulator; shipments are delivered to
// --partner-url, or to a simulated partner this process serves itself.
//
// Requests name their scope in X-Tenant-ID and X-Actor-ID, which anyone can set: run it for
// local experiments only.
//
// On SIGINT or SIGTERM it stops in this order: the HTTP server stops taking requests and lets
// those in flight finish (up to --shutdown-timeout), then the worker stops (a resume under way
// runs to its end), then the simulated partner, then the pool. A key left started by anything
// cut short is resumed by the next worker that runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/examples/shop"
	"github.com/pgsaga/pgsaga/gateway/sms/smssim"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/gateway/webhook/webhooksim"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "shop:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	databaseURL     string
	listen          string
	partnerURL      string
	eventsURL       string
	shutdownTimeout time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("shop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL URL (defaults to $DATABASE_URL)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address the API listens on")
	fs.StringVar(&o.partnerURL, "partner-url", "", "the partner's endpoint for shipments (defaults to a simulated partner served by this process)")
	fs.StringVar(&o.eventsURL, "events-url", "", "receives the outbox's events as unsigned JSON POSTs (defaults to none: events are marked delivered)")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long requests in flight get to finish on shutdown")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.databaseURL == "" {
		o.databaseURL = os.Getenv("DATABASE_URL")
	}
	if o.databaseURL == "" {
		return nil, errors.New("--database-url (or $DATABASE_URL) is required")
	}
	return o, nil
}

// run is the whole process: it returns when ctx ends and everything has stopped, or when
// something could not start.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	pool, err := pgxpool.New(ctx, o.databaseURL)
	if err != nil {
		return fmt.Errorf("error opening the database: %w", err)
	}
	defer pool.Close() // last: everything below uses it
	if _, err := migrations.Migrate(ctx, pool, shop.Migrations()); err != nil {
		return fmt.Errorf("error migrating the database: %w", err)
	}

	partnerURL := o.partnerURL
	if partnerURL == "" {
		partner, url, err := serveSimulatedPartner()
		if err != nil {
			return err
		}
		defer partner.Close()
		partnerURL = url
	}
	partner, err := webhook.New(&webhook.Config{URL: partnerURL})
	if err != nil {
		return err
	}

	// The outbox first: it needs nothing but the transactions its events ride in. Then the
	// service, whose operations emit through it and whose saga client the worker resumes with.
	outbox, err := worker.NewOutbox()
	if err != nil {
		return err
	}
	svc, err := shop.New(&shop.Config{Pool: pool, SMS: smssim.New(nil), Partner: partner, Outbox: outbox, Logger: logger})
	if err != nil {
		return err
	}
	handler, err := svc.Handler(saga.HeaderScope)
	if err != nil {
		return err
	}
	w, err := worker.New(&worker.Config{Pool: pool, Client: svc.Client(), WebhookURL: o.eventsURL, Logger: logger})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		_ = w.Stop(context.WithoutCancel(ctx))
		return fmt.Errorf("error listening on %s: %w", o.listen, err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "shop: listening on http://%s (scope from X-Tenant-ID and X-Actor-ID: local use only)\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	return shutdown(srv, w, o.shutdownTimeout, err)
}

// shutdown stops the server (no new requests; those in flight finish), then the worker. serveErr
// is why the server stopped on its own, if it did.
func shutdown(srv *http.Server, w *worker.Worker, timeout time.Duration, serveErr error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errs := []error{}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("error serving: %w", serveErr))
	}
	if err := srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("error stopping the server: %w", err))
	}
	if err := w.Stop(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// serveSimulatedPartner serves a simulated partner endpoint on a free local port.
func serveSimulatedPartner() (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("error listening for the simulated partner: %w", err)
	}
	srv := &http.Server{Handler: webhooksim.New(nil), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String() + "/shipments", nil
}
