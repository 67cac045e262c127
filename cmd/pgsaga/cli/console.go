package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/cmd/internal/clientaddr"
	"github.com/pgsaga/pgsaga/cmd/internal/console"
	"github.com/pgsaga/pgsaga/internal/operator"
	"github.com/pgsaga/pgsaga/worker"
)

// Environment variables of the console: one more operator's token, outside the database, and
// that operator's name.
const (
	envConsoleToken    = "PGSAGA_CONSOLE_TOKEN"
	envConsoleOperator = "PGSAGA_CONSOLE_OPERATOR"
)

type consoleFlags struct {
	addr           string
	opsAddr        string
	lease          time.Duration
	insecureHTTP   bool
	trustedProxies string
}

func (c *cli) consoleCmd() *cobra.Command {
	f := &consoleFlags{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the operator console: stuck and parked keys, resume and settle, River's jobs",
		Long: `Serves the operator console on --addr: an overview of the keys by state and operation with
the stuck ones and the oldest of them, key lists with filters, each key with its external
calls, stored response and history, and Resume and Settle (recorded in the key's history under
the signed-in operator's name); River's own UI under /river/. Every page has a JSON twin
(Accept: application/json).

Operators sign in with their own token (` + "`operator add`" + `): scripts send it as "Authorization:
Bearer <token>", people log in with it once and get a session cookie, which ends after 12h,
after 1h without a request, on logout, and when the operator is revoked. ` + envConsoleToken + `,
when set (at least 32 bytes), is one more operator's token, named by ` + envConsoleOperator + `
(default admin). With no operator and no ` + envConsoleToken + ` it refuses to start (exit 2).
After 10 failed sign-ins from one client address within a minute, further attempts from it are
answered 429 until the minute has passed; a login form naming an operator slows further
failures naming them too. Each refusal is counted in
pgsaga_auth_failures_total{surface="console",reason} (on --ops-addr) and logged with the
client's address, at most 30 lines at once and one a second beyond; a name is logged only when
it is an operator's, never a token. Behind a reverse proxy, --trusted-proxies names the
proxies (CIDR prefixes or addresses, comma-separated) whose X-Forwarded-For gives the client's
address (the rightmost hop that is not a trusted proxy): without it every client has the
proxy's address, and one client's failures lock out all.

The session cookie is Secure and __Host- prefixed, for a console reached over TLS (directly or
through a proxy); --insecure-http serves plain HTTP instead, and is refused with an --addr that
is not a loopback address. --ops-addr serves /metrics and /healthz on an address of their own.

Prints one line, "<name> console: listening on http://ADDR", on stdout once it accepts
connections. It builds the application's service (its own flags included), as resume and
settle do, to run their operations. SIGINT or SIGTERM stops it: requests in flight finish (up
to 10s).`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.console(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8081", "address to listen on (port 0 picks a free port)")
	fl.StringVar(&f.opsAddr, "ops-addr", "", "serve /metrics and /healthz on this address (default: none)")
	fl.DurationVar(&f.lease, "lease", 30*time.Second, "the lease a resume from the console holds on a key")
	fl.BoolVar(&f.insecureHTTP, "insecure-http", false, "serve plain HTTP: the session cookie is not Secure (loopback --addr only)")
	fl.StringVar(&f.trustedProxies, "trusted-proxies", "", "reverse proxies (CIDR prefixes or addresses, comma-separated) whose X-Forwarded-For names the client (default: none, the peer is the client)")
	c.appFlags(cmd)
	return cmd
}

func (c *cli) console(cmd *cobra.Command, f *consoleFlags) error {
	token := strings.TrimSpace(c.env.Getenv(envConsoleToken))
	if token != "" && len(token) < console.MinTokenLength {
		return usageErrorf("%s must be at least %d bytes (got %d): make one with `%s operator add`, or e.g. head -c 32 /dev/urandom | base64",
			envConsoleToken, console.MinTokenLength, len(token), c.app.Name)
	}
	tokenOperator := strings.TrimSpace(c.env.Getenv(envConsoleOperator))
	if tokenOperator == "" {
		tokenOperator = "admin"
	}
	if !operator.NameRule.MatchString(tokenOperator) {
		return usageErrorf("%s %q: %v", envConsoleOperator, tokenOperator, operator.ErrInvalidName)
	}
	if f.insecureHTTP {
		if err := requireLoopback("--insecure-http", f.addr); err != nil {
			return err
		}
	}
	if err := checkLease(f.lease); err != nil {
		return err
	}
	clients, err := clientaddr.Parse(f.trustedProxies)
	if err != nil {
		return usageErrorf("invalid --trusted-proxies: %v", err)
	}
	logger, err := c.logger(logDaemon)
	if err != nil {
		return err
	}
	if _, err := c.startTracing(cmd.Context(), cmd.Name(), logger); err != nil {
		return err
	}
	defer c.tracing.shutdown()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pool, err := c.connectMigrated(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	operators := operator.NewStore(pool)
	active, err := operators.CountActive(ctx)
	if err != nil {
		return err
	}
	if active == 0 && token == "" {
		return usageErrorf("no operator can sign in: add one with `%s operator add NAME`, or set %s", c.app.Name, envConsoleToken)
	}
	if token != "" {
		// The history must tell the environment's operator from the database's, revoked ones
		// included.
		stored, err := operators.List(ctx)
		if err != nil {
			return err
		}
		for _, op := range stored {
			if op.Name == tokenOperator {
				return usageErrorf("%s names %q, an operator in the database: set it to a name of its own, so that the history tells them apart",
					envConsoleOperator, tokenOperator)
			}
		}
	}
	// The console resumes and settles: it needs the application's operations.
	reg := newRegistry()
	svc, err := c.build(ctx, cmd, &BuildParams{Pool: pool, Lease: f.lease, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	river, err := worker.NewInsertOnlyClient(pool)
	if err != nil {
		return err
	}
	con, err := console.New(&console.Config{Client: svc.Client, River: river, Operators: operators, Token: token,
		TokenOperator: tokenOperator, InsecureHTTP: f.insecureHTTP, Name: c.app.Name, Logger: logger,
		Registerer: reg, ClientAddr: clients.Of})
	if err != nil {
		return err
	}
	if err := con.Start(ctx); err != nil {
		return err
	}
	var ops *opsServer
	if f.opsAddr != "" {
		if err := reg.Register(worker.NewStateCollector(svc.Client)); err != nil {
			return fmt.Errorf("error registering the key state metrics: %w", err)
		}
		if ops, err = startOps(f.opsAddr, reg, pool, logger); err != nil {
			return err
		}
		defer ops.stop(ctx)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", f.addr, err)
	}
	// An answer may take as long as a resume can (a phase, a call cut at two thirds of the
	// lease, the next phase).
	srv := newHTTPServer(withRequestIDs(con), &serverOpts{WriteTimeout: max(time.Minute, 2*f.lease), Logger: logger})
	if ops != nil {
		fmt.Fprintf(c.env.Stdout, "%s console: metrics and health on http://%s\n", c.app.Name, ops.addr)
	}
	fmt.Fprintf(c.env.Stdout, "%s console: listening on http://%s\n", c.app.Name, ln.Addr())
	logger.Info("console serving", "addr", ln.Addr().String(), "operators", active, "token_operator", token != "",
		"insecure_http", f.insecureHTTP, "trusted_proxies", clients.Trusted())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("console server stopped: %w", err)
	case err := <-ops.failed():
		_ = srv.Close()
		return fmt.Errorf("operations listener stopped: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console server stopped: %w", err)
	}
	return nil
}
