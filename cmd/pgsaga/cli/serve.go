package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/cmd/internal/clientaddr"
	"github.com/pgsaga/pgsaga/cmd/internal/refusal"
	"github.com/pgsaga/pgsaga/internal/apikey"
	"github.com/pgsaga/pgsaga/saga/sagaprom"
	"github.com/pgsaga/pgsaga/worker"
)

// listeningLine matches the line serve and gateway-sim print once they accept connections.
var listeningLine = regexp.MustCompile(`listening on (http://\S+)`)

// shutdownGrace is how long serve lets requests in flight finish after SIGINT/SIGTERM.
const shutdownGrace = 10 * time.Second

type serveFlags struct {
	daemonFlags
	addr                 string
	opsAddr              string
	worker               bool
	maxInFlight          int
	maxPerTenant         int
	trustedProxies       string
	insecureScopeHeaders bool
}

// defaultServeOpsAddr is where serve answers /metrics and /healthz by default.
const defaultServeOpsAddr = "127.0.0.1:9091"

// inFlightPerConn is how many requests serve lets in per pooled connection by default: a phased
// request holds a connection only during its phases, not during its external calls.
const inFlightPerConn = 4

// maxRequestBody is the largest body serve reads before a request takes a slot: the engine's
// limit (saga.HandlerOpts.MaxBodyBytes' default) and the webhooks'.
const maxRequestBody = 1 << 20

func (c *cli) serveCmd() *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service's HTTP API, with /metrics and /healthz on an operations address",
		Long: `Runs the application's HTTP API (for the pgsaga binary: the example payments API) on --addr,
and Prometheus metrics on /metrics and a health check on /healthz on --ops-addr (default
127.0.0.1:9091; empty: none), never on --addr. Prints "<name> serve: metrics and health on
http://ADDR", then "<name> serve: listening on http://ADDR" on stdout once both accept
connections; an address with port 0 picks a free port and these lines say which. --worker also
runs the recovery worker in this process.

Every request of the API authenticates with an API key, "Authorization: Bearer <secret>"
(` + "`apikey create`" + `): the key names the request's tenant and actor. A request without a valid key
(missing, malformed, unknown or revoked) is answered 401 unauthenticated before anything is
read or stored; each request reads its key, so a revoke takes effect at once.
--insecure-scope-headers takes the tenant and actor from the X-Tenant-ID and X-Actor-ID
headers instead, which anyone can set: for local experiments and tests, and refused (exit 2)
with an --addr that is not a loopback address.

At start it waits up to --db-wait for a database that cannot be reached (down, starting up,
shutting down, a standby refusing writes), retrying with backoff and logging each failed
attempt, and exits 1 if it never answers. Once it has answered, serve never exits because it
went away: a database outage fails the requests it interrupts (503, the keys stay started) and
the pool reconnects; the --worker keeps trying to start if the outage meets its start. It
refuses to start on a database that lacks a migration.

Its doors are shut to slow and greedy clients: headers must arrive within 10s and fit in
64 KiB (431 otherwise), a request body (at most 1 MiB) within 30s, or the connection is cut; a
client that does not read its answer within max(60s, 2 x --lease) of sending the request is cut
off, and an idle connection after 60s. A request takes one of the --max-in-flight slots only
once its body is read (default: 4 per pooled connection, 64 with the default pool of 16), and
no tenant holds more than --max-in-flight-per-tenant of them (default: half the pooled
connections, 8 with the default pool): a request of a tenant at its share is answered at once
with 429 too_many_requests and Retry-After, one beyond every slot with 503
temporarily_unavailable and Retry-After, and nothing of either is stored. A request counts
against its API key's tenant once that key has authenticated in this process; a webhook
against its source once its signature verifies; anything else (no key, an unknown one) against
one anonymous share.

Every refused authentication (a missing or invalid API key, a webhook signature that does not
verify) is counted in pgsaga_auth_failures_total{surface,reason} and logged, at most 30 lines at
once and one a second beyond, with the client's address, never the secret. Behind a reverse
proxy, --trusted-proxies names the proxies (CIDR prefixes or addresses, comma-separated) whose
X-Forwarded-For gives the client's address: the rightmost hop that is not a trusted proxy.
Every answer carries X-Request-ID, which the log lines of the request carry too.

SIGINT or SIGTERM stops it gracefully: requests in flight finish (up to 10s), then the worker
stops.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.maxInFlight < 0 {
				return usageErrorf("--max-in-flight must be 0 (4 per pooled connection) or more, got %d", f.maxInFlight)
			}
			if f.maxPerTenant < 0 {
				return usageErrorf("--max-in-flight-per-tenant must be 0 (half the pooled connections) or more, got %d", f.maxPerTenant)
			}
			if _, err := clientaddr.Parse(f.trustedProxies); err != nil {
				return usageErrorf("invalid --trusted-proxies: %v", err)
			}
			if f.insecureScopeHeaders {
				if err := requireLoopback("--insecure-scope-headers", f.addr); err != nil {
					return err
				}
			}
			return c.serve(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free port)")
	fl.StringVar(&f.opsAddr, "ops-addr", defaultServeOpsAddr, "address of /metrics and /healthz (port 0 picks a free port; empty: none)")
	fl.BoolVar(&f.insecureScopeHeaders, "insecure-scope-headers", false, "take the scope from X-Tenant-ID and X-Actor-ID instead of an API key (loopback --addr only)")
	f.daemonFlags.add(fl, "how long an execution owns a key before another may take it over")
	f.listens = true
	fl.StringVar(&f.listenURL, "listen-database-url", "", "a direct connection (or session pooling) to the same database, where a duplicate of a request in flight listens for it to finish, beside a transaction-pooled --database-url (default $"+envListenDatabaseURL+"; without it such duplicates poll)")
	fl.BoolVar(&f.worker, "worker", false, "also run the recovery worker in this process")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 0, "most requests handled at once; more are answered 503 at once (default: 4 per pooled connection)")
	fl.IntVar(&f.maxPerTenant, "max-in-flight-per-tenant", 0, "most requests of one tenant (or webhook source) handled at once; more are answered 429 at once (default: half the pooled connections)")
	fl.StringVar(&f.trustedProxies, "trusted-proxies", "", "reverse proxies (CIDR prefixes or addresses, comma-separated) whose X-Forwarded-For names the client (default: none, the peer is the client)")
	c.appFlags(cmd)
	return cmd
}

func (c *cli) serve(cmd *cobra.Command, f *serveFlags) error {
	clients, _ := clientaddr.Parse(f.trustedProxies) // checked with the flags
	auth := &apiAuth{known: newKnownSecrets(), clients: clients}
	d, err := c.startDaemon(cmd, &f.daemonFlags, func(p *BuildParams) error {
		if !f.insecureScopeHeaders {
			auth.keys = apikey.NewStore(p.Pool)
		}
		var err error
		if auth.refusals, err = refusal.New(&refusal.Config{Logger: p.Logger, Registerer: p.Registerer}); err != nil {
			return fmt.Errorf("error registering the authentication metrics: %w", err)
		}
		p.Scope = auth.scope
		p.AuthRefused = func(r *http.Request, surface, reason string) {
			auth.refusals.Refused(r.Context(), surface, reason, clients.Of(r), "method", r.Method, "path", r.URL.Path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer d.close()
	ctx, logger, pool, reg, svc := d.ctx, d.logger, d.pool, d.reg, d.svc
	if svc.Handler == nil {
		return errors.New("the application's Build returned no Handler to serve")
	}

	var w *runningWorker
	if f.worker {
		w, err = c.startWorker(ctx, &workerParams{pool: pool, client: svc.Client, logger: logger, registerer: reg,
			sweepInterval: time.Second, webhookSecrets: c.webhookSecrets(), lister: svc.Lister,
			pollOnly: c.transactionPooled()})
		if err != nil {
			return err
		}
	}

	maxInFlight, perTenant := f.maxInFlight, f.maxPerTenant
	if maxInFlight == 0 {
		maxInFlight = inFlightPerConn * int(pool.Config().MaxConns)
	}
	if perTenant == 0 {
		perTenant = max(1, int(pool.Config().MaxConns)/2)
	}
	perTenant = min(perTenant, maxInFlight)
	front := &admission{next: svc.Handler, slots: newFairSlots(maxInFlight, perTenant), maxBody: maxRequestBody,
		party: func(r *http.Request, body []byte) string {
			if svc.Party != nil {
				if p := svc.Party(r, body); p != "" {
					return p
				}
			}
			return auth.party(r)
		}}
	stopWorker := func() {
		if w != nil {
			_ = w.stop(context.WithoutCancel(ctx))
		}
	}
	var ops *opsServer
	if f.opsAddr != "" {
		if ops, err = startOps(f.opsAddr, reg, pool, logger); err != nil {
			stopWorker()
			return err
		}
		defer ops.stop(ctx)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		stopWorker()
		return fmt.Errorf("error listening on %s: %w", f.addr, err)
	}
	// A request may work for about two leases (a phase, a call cut at two thirds of the lease,
	// the next phase): its answer must still get out.
	srv := newHTTPServer(d.tracing.handler(withRequestIDs(front)), &serverOpts{WriteTimeout: max(time.Minute, 2*f.lease), Logger: logger})
	if ops != nil {
		fmt.Fprintf(c.env.Stdout, "%s serve: metrics and health on http://%s\n", c.app.Name, ops.addr)
	}
	fmt.Fprintf(c.env.Stdout, "%s serve: listening on http://%s\n", c.app.Name, ln.Addr())
	logger.Info("serving", "addr", ln.Addr().String(), "ops_addr", f.opsAddr, "worker", f.worker,
		"max_in_flight", maxInFlight, "max_in_flight_per_tenant", perTenant, "trusted_proxies", clients.Trusted(),
		"insecure_scope_headers", f.insecureScopeHeaders)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case err := <-ops.failed():
		serveErr = fmt.Errorf("operations listener: %w", err)
		_ = srv.Close()
		<-errc
	case <-ctx.Done():
		logger.Info("shutting down")
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		if err := srv.Shutdown(shutdownCtx); err != nil {
			_ = srv.Close()
		}
		cancel()
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	if w != nil {
		if err := w.stop(context.WithoutCancel(ctx)); err != nil && serveErr == nil {
			return err
		}
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("server stopped: %w", serveErr)
	}
	return nil
}

// appFlags adds the application's own flags to cmd, a command that builds the service.
func (c *cli) appFlags(cmd *cobra.Command) {
	if c.app.Flags != nil {
		c.app.Flags(cmd.Name(), cmd.Flags())
	}
}

// build calls the application's Build for cmd, giving it the command's flags and an outbox.
func (c *cli) build(ctx context.Context, cmd *cobra.Command, p *BuildParams) (*Service, error) {
	if c.app.Build == nil {
		return nil, errors.New("this binary has no operations (App.Build is nil)")
	}
	outbox, err := worker.NewOutbox()
	if err != nil {
		return nil, err
	}
	p.Command, p.Flags, p.Outbox, p.Getenv = cmd.Name(), cmd.Flags(), outbox, c.env.Getenv
	if p.Scope == nil {
		p.Scope = noAPIScope
	}
	if p.AuthRefused == nil {
		p.AuthRefused = func(*http.Request, string, string) {}
	}
	p.TracerProvider = c.tracing.tracerProvider()
	p.TransactionPooling = c.transactionPooled()
	if p.Registerer != nil {
		if p.Observer, err = sagaprom.NewObserver(p.Registerer); err != nil {
			return nil, err
		}
	}
	svc, err := c.app.Build(ctx, p)
	if err != nil {
		return nil, err
	}
	if svc == nil || svc.Client == nil {
		return nil, errors.New("the application's Build returned no saga Client")
	}
	if err := checkBuiltPooling(svc, p); err != nil {
		return nil, err
	}
	return svc, nil
}

func checkLease(lease time.Duration) error {
	if lease < time.Second {
		return usageErrorf("--lease must be at least 1s, got %s", lease)
	}
	return nil
}

// newRegistry is a fresh Prometheus registry with the Go runtime and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// healthz answers 200 {"status":"ok"} while the database answers within 2s and takes writes;
// 503 {"status":"unavailable"} when it does not answer, and 503 {"status":"read_only"} when the
// server the pool reaches refuses writes (a standby: a single-host URL naming a node that was
// demoted, or default_transaction_read_only on). One round trip, as a ping.
func healthz(pool *pgxpool.Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		var readOnly bool
		err := pool.QueryRow(ctx, healthSQL).Scan(&readOnly)
		switch {
		case err != nil:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"unavailable","error":"database unreachable"}`))
		case readOnly:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"read_only","error":"the database server refuses writes (a standby?)"}`))
		default:
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		}
	})
}

// healthSQL asks whether the server would refuse a write: a standby (in recovery) or a
// session that is read-only by default.
const healthSQL = `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool`
