package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// workerStopTimeout bounds a clean stop: keys being resumed finish their current steps.
const workerStopTimeout = 30 * time.Second

// pauseWorkerStart is the point between the database checks and the worker's start where test
// binaries can be held (see pause).
const pauseWorkerStart = "worker/start"

type workerFlags struct {
	daemonFlags
	sweepInterval      time.Duration
	tombstoneRetention time.Duration
	metricsAddr        string
	webhookURL         string
}

func (c *cli) workerCmd() *cobra.Command {
	f := &workerFlags{}
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the recovery worker: resumer, outbox delivery and retention GC",
		Long: `Runs pgsaga's background work until SIGINT or SIGTERM: every --sweep-interval it claims
started keys whose lease expired and whose next attempt is due, and resumes each from its
recovery point (a claim takes the key's lease, so no key is resumed by two workers at once);
it delivers outbox events and deletes completed keys past their retention. Any number of
workers may run against one database. On SIGINT or SIGTERM it stops claiming, lets the
resumes under way finish their current steps (up to 30s), releases what it claimed and did
not start, and exits 0. Killed outright, it leaves leases that expire on their own; any
worker resumes those keys then. --metrics-addr serves /metrics and /healthz. Deliveries to
--webhook-url are signed (Pgsaga-Signature) with $PGSAGA_WEBHOOK_SECRET; while rotating it, set
$PGSAGA_WEBHOOK_SECRET_NEXT too and both sign.

At start it waits up to --db-wait for a database that cannot be reached (down, starting up,
shutting down, a standby refusing writes), retrying with backoff and logging each failed
attempt, and exits 1 if it never answers. Once it has answered, the worker never exits because
it went away: should it go while the worker starts, the worker keeps trying to start (backoff
capped at 5s, each failure logged) for as long as it takes; while it runs, the jobs an outage
interrupts fail and are retried, and the pool and River reconnect. A database that answers
and refuses (not migrated, a wrong password) makes it exit 1 with one line.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.runWorker(cmd, f) },
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.sweepInterval, "sweep-interval", time.Second, "how often to look for keys to resume")
	f.daemonFlags.add(fl, "the lease a resume takes on a key")
	fl.DurationVar(&f.tombstoneRetention, "tombstone-retention", saga.DefaultTombstoneRetention, "how long after its completion a key retention deleted answers a retry 410 idempotency_key_expired")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics and /healthz on this address (default: none)")
	fl.StringVar(&f.webhookURL, "webhook-url", "", "POST every outbox event here (default: mark events delivered without sending)")
	c.appFlags(cmd)
	return cmd
}

func (c *cli) runWorker(cmd *cobra.Command, f *workerFlags) error {
	if f.sweepInterval < time.Millisecond {
		return usageErrorf("--sweep-interval must be at least 1ms, got %s", f.sweepInterval)
	}
	if f.tombstoneRetention <= 0 {
		return usageErrorf("--tombstone-retention must be positive, got %s", f.tombstoneRetention)
	}
	d, err := c.startDaemon(cmd, &f.daemonFlags, nil)
	if err != nil {
		return err
	}
	defer d.close()
	ctx, logger, pool, reg, svc := d.ctx, d.logger, d.pool, d.reg, d.svc
	w, err := c.startWorker(ctx, &workerParams{pool: pool, client: svc.Client, logger: logger, registerer: reg,
		sweepInterval: f.sweepInterval, tombstoneRetention: f.tombstoneRetention, webhookURL: f.webhookURL, webhookSecrets: c.webhookSecrets(), lister: svc.Lister,
		pollOnly: c.transactionPooled()})
	if err != nil {
		return err
	}
	defer w.stop(context.WithoutCancel(ctx))

	var ops *opsServer
	if f.metricsAddr != "" {
		if ops, err = startOps(f.metricsAddr, reg, pool, logger); err != nil {
			return err
		}
		fmt.Fprintf(c.env.Stdout, "%s worker: metrics listening on http://%s\n", c.app.Name, ops.addr)
	}
	fmt.Fprintf(c.env.Stdout, "%s worker: running (sweep every %s)\n", c.app.Name, f.sweepInterval)

	select {
	case <-ctx.Done():
	case err := <-ops.failed():
		return fmt.Errorf("metrics server stopped: %w", err)
	}
	logger.Info("stopping")
	ops.stop(ctx)
	return w.stop(context.WithoutCancel(ctx))
}

type workerParams struct {
	pool          *pgxpool.Pool
	client        *saga.Client
	logger        *slog.Logger
	registerer    prometheus.Registerer
	sweepInterval time.Duration
	// tombstoneRetention is how long deleted keys' tombstones are kept (0: the default).
	tombstoneRetention time.Duration
	webhookURL         string
	// webhookSecrets sign the deliveries ($PGSAGA_WEBHOOK_SECRET).
	webhookSecrets [][]byte
	// lister lists the provider's charges: the worker reconciles them when it is set.
	lister gateway.Lister
	// pollOnly runs River without LISTEN (--database-pooling=transaction).
	pollOnly bool
}

// Environment variables holding the secrets that sign outbox deliveries.
const (
	envWebhookSecret     = "PGSAGA_WEBHOOK_SECRET"
	envWebhookSecretNext = "PGSAGA_WEBHOOK_SECRET_NEXT"
)

// webhookSecrets are the secrets outbox deliveries are signed with, from the environment.
func (c *cli) webhookSecrets() [][]byte {
	var out [][]byte
	for _, name := range []string{envWebhookSecret, envWebhookSecretNext} {
		if v := c.env.Getenv(name); v != "" {
			out = append(out, []byte(v))
		}
	}
	return out
}

// runningWorker is a started worker; stop is idempotent.
type runningWorker struct {
	w      *worker.Worker
	logger *slog.Logger
}

// startWorker starts a worker for p.client's operations. It keeps running when ctx is
// cancelled, until stop: a signal must stop it cleanly, not cut it short.
func (c *cli) startWorker(ctx context.Context, p *workerParams) (*runningWorker, error) {
	w, err := worker.New(&worker.Config{
		Pool:               p.pool,
		Client:             p.client,
		SweepInterval:      p.sweepInterval,
		TombstoneRetention: p.tombstoneRetention,
		WebhookURL:         p.webhookURL,
		WebhookSecrets:     p.webhookSecrets,
		Registerer:         p.registerer,
		Logger:             p.logger,
		Lister:             p.lister,
		PollOnly:           p.pollOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("error creating the worker: %w", err)
	}
	// The database answered the start-up checks; it may go away again right now.
	if err := c.pause(ctx, pauseWorkerStart); err != nil {
		return nil, err
	}
	if err := w.Start(context.WithoutCancel(ctx)); err != nil {
		if errors.Is(err, saga.ErrListenUnheard) {
			return nil, fmt.Errorf("%w: River listens on --database-url, which reaches no session of its own "+
				"(a pooler in transaction pooling mode?): declare it with --database-pooling=transaction (River then polls), "+
				"or give the worker a direct --database-url", saga.ErrListenUnheard)
		}
		return nil, err
	}
	return &runningWorker{w: w, logger: p.logger}, nil
}

// stop stops the worker cleanly within workerStopTimeout.
func (r *runningWorker) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, workerStopTimeout)
	defer cancel()
	if err := r.w.Stop(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the worker did not stop within %s; unfinished keys are resumed once their leases expire", workerStopTimeout)
		}
		return err
	}
	return nil
}
