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

	"github.com/pgsaga/pgsaga/worker"
)

// daemon is what the long-running commands (serve, worker) share: a context that ends on
// SIGINT or SIGTERM, a logger, the migrated pool, a metrics registry (runtime, process and key
// state collectors) and the application's service built on the chosen gateway.
type daemon struct {
	ctx    context.Context
	logger *slog.Logger
	pool   *pgxpool.Pool
	reg    *prometheus.Registry
	svc    *Service
	close  func()
}

func (c *cli) startDaemon(ctx context.Context, lease time.Duration, gatewayURL string) (*daemon, error) {
	if err := checkLease(lease); err != nil {
		return nil, err
	}
	logger, err := c.logger(logDaemon)
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	pool, err := c.connectMigrated(ctx)
	if err != nil {
		stop()
		return nil, err
	}
	d := &daemon{ctx: ctx, logger: logger, pool: pool, reg: newRegistry(), close: func() { pool.Close(); stop() }}
	if err := d.start(c, lease, gatewayURL); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *daemon) start(c *cli, lease time.Duration, gatewayURL string) error {
	gw, err := c.gateway(gatewayURL)
	if err != nil {
		return err
	}
	d.svc, err = c.build(d.ctx, &BuildParams{Pool: d.pool, Gateway: gw, Lease: lease, Logger: d.logger, Registerer: d.reg})
	if err != nil {
		return err
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
