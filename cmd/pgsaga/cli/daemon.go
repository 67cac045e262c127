package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgsaga/pgsaga/worker"
)

// defaultDBWait is how long serve and worker wait for an unreachable database at start-up: long
// enough to ride out a database restart or a deploy that starts them before it.
const defaultDBWait = time.Minute

// daemonFlags are the flags the long-running commands (serve, worker) share.
type daemonFlags struct {
	lease  time.Duration
	dbWait time.Duration
	// listens is set by the commands that run requests (serve): they take
	// --listen-database-url (listenURL), and check at start that their bounded waits hear the
	// notifications they listen for.
	listens   bool
	listenURL string
}

func (f *daemonFlags) add(fl *pflag.FlagSet, leaseUsage string) {
	fl.DurationVar(&f.lease, "lease", 30*time.Second, leaseUsage)
	fl.DurationVar(&f.dbWait, "db-wait", defaultDBWait, "at start, how long to wait for a database that cannot be reached (0: fail at once)")
}

func (f *daemonFlags) check() error {
	if err := checkLease(f.lease); err != nil {
		return err
	}
	if f.dbWait < 0 {
		return usageErrorf("--db-wait must not be negative, got %s", f.dbWait)
	}
	return nil
}

// daemon is what the long-running commands (serve, worker) share: a context that ends on
// SIGINT or SIGTERM, a logger, the migrated pool, a metrics registry (runtime, process and key
// state collectors) and the application's service.
type daemon struct {
	ctx     context.Context
	logger  *slog.Logger
	pool    *pgxpool.Pool
	listen  *pgxpool.Pool // --listen-database-url's, or nil
	reg     *prometheus.Registry
	svc     *Service
	tracing *tracing
	close   func()
}

// startDaemon waits for the database (up to --db-wait), checks the schema and builds the
// application's service for the long-running command cmd (serve or worker).
func (c *cli) startDaemon(cmd *cobra.Command, f *daemonFlags) (*daemon, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	logger, err := c.logger(logDaemon)
	if err != nil {
		return nil, err
	}
	tr, err := c.startTracing(cmd.Context(), cmd.Name(), logger)
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	pool, err := c.connectMigratedWaiting(ctx, f.dbWait, logger)
	if err != nil {
		stop()
		tr.shutdown()
		return nil, err
	}
	d := &daemon{ctx: ctx, logger: logger, pool: pool, reg: newRegistry(), tracing: tr,
		close: func() { pool.Close(); stop(); tr.shutdown() }}
	if err := d.start(c, cmd, f); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *daemon) start(c *cli, cmd *cobra.Command, f *daemonFlags) error {
	var err error
	if f.listens {
		if err := d.openListen(c, f.listenURL); err != nil {
			return err
		}
	}
	d.svc, err = c.build(d.ctx, cmd, &BuildParams{Pool: d.pool, ListenPool: d.listen, Lease: f.lease, Logger: d.logger, Registerer: d.reg})
	if err != nil {
		return err
	}
	if f.listens {
		if err := checkListen(d.ctx, d.svc.Client, d.listen != nil); err != nil {
			return err
		}
	}
	if err := d.reg.Register(worker.NewStateCollector(d.svc.Client)); err != nil {
		return fmt.Errorf("error registering the key state metrics: %w", err)
	}
	return nil
}

// opsMux serves /metrics and /healthz.
func (d *daemon) opsMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{Registry: d.reg}))
	mux.Handle("GET /healthz", healthz(d.pool))
	return mux
}

// openListen opens the pool of --listen-database-url, if any, closed with the daemon, and logs
// where the bounded waits for requests in flight listen.
func (d *daemon) openListen(c *cli, flag string) error {
	listen, err := c.openListenPool(d.ctx, flag)
	if err != nil {
		return err
	}
	switch {
	case listen != nil:
		d.listen = listen
		closePool := d.close
		d.close = func() { listen.Close(); closePool() }
		d.logger.Info("waits for requests in flight listen on --listen-database-url", "host", listen.Config().ConnConfig.Host)
	case c.transactionPooled():
		d.logger.Info("waits for requests in flight poll the key: --database-pooling is transaction and there is no --listen-database-url")
	}
	return nil
}
