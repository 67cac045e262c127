package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/apikey"
	"github.com/pgsaga/pgsaga/internal/operator"
	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

// demoActors are the actors of the demo's tenant, each with an API key.
var demoActors = []string{"alice", "bob"}

// demoLease is the lease of the demo's service: short, so that a crashed request is taken
// over within seconds.
const demoLease = 3 * time.Second

func (c *cli) demoCmd() *cobra.Command {
	var (
		verbose     bool
		pgBinDir    string
		consoleAddr string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Zero-setup demonstration: exactly-once payments through a faulty gateway",
		Long: `Plays the failures pgsaga exists for against the example payments service and a faulty
gateway simulator, and checks that every effect happened exactly once:

  double click               the same request twice: the second is a byte-identical replay
  lost response              the gateway's answer is lost: resolved by inquiry, one charge
  crash between phases       the server is killed (kill -9) after charging, before recording;
                             the recovery worker resumes the key once its lease expires
  ten concurrent duplicates  ten identical requests at once: one execution, nine replays
  same key, different body   422 idempotency_key_reused, nothing charged
  another actor's key        the same key value from another actor is a separate request
  unknowable, then settled   a gateway with neither inquiry nor keys loses its answer: the
                             payment is parked (outcome_unknown), never charged twice; an
                             operator settles it with the charge found at the provider

Without --database-url or DATABASE_URL it starts a throwaway PostgreSQL (initdb and postgres
must be installed) and removes it afterwards; with one, it migrates that database (adding the
example's tables) and uses fresh tenant ids, so it can run again. It prints one row per
scenario with the requests sent, the charges made and the verdict, and exits 0 only when every
effect happened exactly once (checked against the simulator's ledger and the payments table).
It leaves no process and no temporary directory behind, also when interrupted (SIGINT,
SIGTERM). Killed outright (kill -9), it still leaves no process (its children die with it);
the throwaway cluster's directory is then removed by the next run.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, pooled, err := database(cmd, c.env)
			if err != nil {
				return err
			}
			return c.demo(cmd.Context(), url, pooled, verbose, pgBinDir, consoleAddr)
		},
	}
	cmd.Flags().StringVar(&consoleAddr, "console", "", "after the scenarios, serve the operator console on this address (e.g. 127.0.0.1:8081) on the demo's data until SIGINT")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log what the service, the worker and PostgreSQL do on stderr")
	cmd.Flags().StringVar(&pgBinDir, "pg-bin-dir", "", "directory holding initdb and postgres for the throwaway server (default: from PATH, else /usr/lib/postgresql/*/bin)")
	return cmd
}

// demo plays the scenarios on the database at url, or on a throwaway cluster when url is empty.
func (c *cli) demo(ctx context.Context, url string, pooled, verbose bool, pgBinDir, consoleAddr string) (err error) {
	logger := slog.New(slog.DiscardHandler)
	if verbose {
		logger = slog.New(slog.NewTextHandler(c.env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = errors.New("interrupted")
		}
	}()
	out := c.env.Stdout

	if url == "" {
		fmt.Fprintln(out, "starting a throwaway PostgreSQL…")
		cluster, err := pglocal.Start(ctx, &pglocal.Config{BinDir: pgBinDir, Launch: pglocal.Launch{Logger: logger}})
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, envDatabaseURL) {
				msg += "; install PostgreSQL (initdb and postgres, e.g. apt-get install postgresql) or set " + envDatabaseURL + " to an existing server"
			}
			return fmt.Errorf("no PostgreSQL could be started: %s", msg)
		}
		defer func() {
			if err := cluster.Stop(); err != nil {
				logger.Error("error stopping PostgreSQL", "error", err)
			}
		}()
		url = cluster.URL("postgres")
	}
	pool, err := openPool(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Migrate(ctx, pool, &migrations.MigrateOpts{Lines: c.app.Migrations}); err != nil {
		return err
	}

	d, err := newDemo(ctx, c, pool, pooled, url, logger)
	if err != nil {
		return err
	}
	defer d.close()

	fmt.Fprintf(out, "payments API on %s, gateway simulator on %s, tenant %s\n\n", d.apiURL, d.simURL, d.tenant)
	var rows []*scenarioResult
	for _, sc := range d.scenarios() {
		res := &scenarioResult{name: sc.name}
		if err := sc.run(ctx, res); err != nil {
			if ctx.Err() != nil {
				return err
			}
			res.fail(err.Error())
		}
		if res.ok() {
			if err := d.checkExactlyOnce(ctx, res); err != nil {
				res.fail(err.Error())
			}
		}
		rows = append(rows, res)
	}
	if err := d.checkLedger(ctx); err != nil {
		rows = append(rows, &scenarioResult{name: "ledger vs payments table", verdict: "FAIL: " + err.Error()})
	}

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tREQUESTS\tCHARGES\tVERDICT")
	failed := 0
	for _, r := range rows {
		if !r.ok() {
			failed++
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.name, r.requests, r.charges, r.verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	if failed == 0 {
		fmt.Fprintf(out, "all %d scenarios passed: every charge happened exactly once (%d charges in the gateway's ledger, %d succeeded payments)\n",
			len(rows), d.sim.TotalCharges(), d.succeeded(ctx))
	}
	if consoleAddr != "" {
		if err := d.serveConsole(ctx, consoleAddr); err != nil && ctx.Err() == nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "\nto look at the demo's keys (tenant %s) in the operator console, run the demo again with\n"+
			"--console 127.0.0.1:8081, or keep a database and run: %[2]s operator add NAME, then %[2]s console --insecure-http --database-url URL\n",
			d.tenant, c.app.Name)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d scenarios failed: some effect did not happen exactly once", failed, len(rows))
	}
	return nil
}

// serveConsole runs `console` on the demo's data as a separate process, over plain HTTP (addr
// must be a loopback one), with a fresh token, and prints how to open it; it returns when ctx
// ends (SIGINT, SIGTERM).
func (d *demo) serveConsole(ctx context.Context, addr string) error {
	token := operator.NewToken()
	console, err := d.startChild(ctx, "console", []string{"console", "--addr", addr, "--insecure-http", "--gateway-url", d.simURL,
		"--log-level", "off"}, "PGSAGA_CONSOLE_TOKEN="+token)
	if err != nil {
		return err
	}
	defer console.kill()
	fmt.Fprintf(d.c.env.Stdout, "\noperator console on %s (log in with the token %s); the demo's tenant is %s.\n"+
		"Ctrl-C stops it and the demo.\n", console.url, token, d.tenant)
	select {
	case <-ctx.Done():
	case <-console.done:
		return errors.New("the console process exited")
	}
	return nil
}

// demo is the demo's running world: the simulator over HTTP, the payments service over HTTP,
// its saga client (which resumes the crashed key as the worker would), and a fresh tenant.
type demo struct {
	c     *cli
	pool  *pgxpool.Pool
	dbURL string
	// pooled is true when dbURL goes through a transaction pooler (--database-pooling).
	pooled bool
	logger *slog.Logger
	sim    *sim.Simulator
	simURL string
	apiURL string
	tenant string
	client *saga.Client
	http   *http.Client
	// apiKeys are the secrets of the API keys the demo made, by actor of its tenant: the API
	// authenticates every request by one, as `pgsaga serve` does.
	apiKeys map[string]string

	stopSim func()
	api     *http.Server
}

func newDemo(ctx context.Context, c *cli, pool *pgxpool.Pool, pooled bool, dbURL string, logger *slog.Logger) (*demo, error) {
	d := &demo{c: c, pool: pool, dbURL: dbURL, pooled: pooled, logger: logger, tenant: "demo-" + uuid.NewString()[:8],
		http: &http.Client{Timeout: 30 * time.Second}}

	d.sim = sim.New(nil)
	simLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening for the gateway simulator: %w", err)
	}
	simCtx, cancelSim := context.WithCancel(context.WithoutCancel(ctx))
	simDone := make(chan struct{})
	go func() { _ = d.sim.Serve(simCtx, simLn); close(simDone) }()
	d.stopSim = func() { cancelSim(); <-simDone }
	d.simURL = "http://" + simLn.Addr().String()

	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	gw, err := sim.NewClient(d.simURL, nil)
	if err != nil {
		return nil, err
	}
	svc, err := payments.New(&payments.Config{Pool: pool, Gateway: gw, Lease: demoLease, Logger: logger, GatewayRetries: 2,
		TransactionPooling: pooled})
	if err != nil {
		return nil, err
	}
	keys := apikey.NewStore(pool)
	d.apiKeys = map[string]string{}
	for _, actor := range demoActors {
		k, err := keys.Create(ctx, saga.Scope{Tenant: d.tenant, Actor: actor})
		if err != nil {
			return nil, err
		}
		d.apiKeys[actor] = k.Secret
	}
	h, err := svc.Handler(keys.Scope)
	if err != nil {
		return nil, err
	}
	d.client = svc.Client()
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("error listening for the payments API: %w", err)
	}
	d.api = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = d.api.Serve(apiLn) }()
	d.apiURL = "http://" + apiLn.Addr().String()
	ok = true
	return d, nil
}

// close stops the API and the simulator; requests in flight are cut.
func (d *demo) close() {
	if d.api != nil {
		_ = d.api.Close()
	}
	d.stopSim()
	d.http.CloseIdleConnections()
}
