package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
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
// application's service for the long-running command cmd (serve or worker). api, when not nil,
// completes the BuildParams with how the service's API authenticates (Scope, AuthRefused).
func (c *cli) startDaemon(cmd *cobra.Command, f *daemonFlags, api func(*BuildParams) error) (*daemon, error) {
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
	if err := d.start(c, cmd, f, api); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *daemon) start(c *cli, cmd *cobra.Command, f *daemonFlags, api func(*BuildParams) error) error {
	var err error
	if f.listens {
		if err := d.openListen(c, f.listenURL); err != nil {
			return err
		}
	}
	p := &BuildParams{Pool: d.pool, ListenPool: d.listen, Lease: f.lease, Logger: d.logger, Registerer: d.reg}
	if api != nil {
		if err := api(p); err != nil {
			return err
		}
	}
	d.svc, err = c.build(d.ctx, cmd, p)
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
func (d *daemon) opsMux() *http.ServeMux { return opsMux(d.reg, d.pool) }

// opsMux serves the operations endpoints: /metrics from reg and /healthz on pool. It is served
// on an address of its own (serve and console --ops-addr, worker --metrics-addr), never beside
// an API: a scrape or a health probe neither competes with the API's requests for its limits
// nor is reachable where the API is exposed.
func opsMux(reg *prometheus.Registry, pool *pgxpool.Pool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle("GET /healthz", healthz(pool))
	return mux
}

// opsServer is a running operations listener (see opsMux).
type opsServer struct {
	srv  *http.Server
	addr net.Addr
	errc chan error
}

// startOps serves opsMux(reg, pool) on addr until stop.
func startOps(addr string, reg *prometheus.Registry, pool *pgxpool.Pool, logger *slog.Logger) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("error listening on %s: %w", addr, err)
	}
	o := &opsServer{srv: newHTTPServer(opsMux(reg, pool), &serverOpts{Logger: logger}), addr: ln.Addr(), errc: make(chan error, 1)}
	go func() { o.errc <- o.srv.Serve(ln) }()
	return o, nil
}

// failed delivers the server's error if it stops on its own; a nil *opsServer never does.
func (o *opsServer) failed() <-chan error {
	if o == nil {
		return nil
	}
	return o.errc
}

// stop shuts the listener down, letting scrapes in flight finish (up to 5s). A nil *opsServer
// is fine.
func (o *opsServer) stop(ctx context.Context) {
	if o == nil {
		return
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := o.srv.Shutdown(shutdownCtx); err != nil {
		_ = o.srv.Close()
	}
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
