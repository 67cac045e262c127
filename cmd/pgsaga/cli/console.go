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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/internal/console"
	"github.com/pgsaga/pgsaga/worker"
)

// envConsoleToken is the environment variable that holds the console's token.
const envConsoleToken = "PGSAGA_CONSOLE_TOKEN"

type consoleFlags struct {
	addr  string
	lease time.Duration
}

func (c *cli) consoleCmd() *cobra.Command {
	f := &consoleFlags{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the operator console: stuck and parked keys, resume and settle, River's jobs",
		Long: `Serves the operator console on --addr: an overview of the keys by state and operation with
the stuck ones and the oldest of them, key lists with filters, each key with its external
calls, stored response and history, and Resume and Settle (recorded as by "console"); River's
own UI under /river/. Every page has a JSON twin (Accept: application/json).

The console needs a token in ` + envConsoleToken + ` (without one it refuses to start, exit 2):
scripts send it as "Authorization: Bearer <token>", people log in with it once and get a
session cookie. Prints one line, "<name> console: listening on http://ADDR", on stdout once it
accepts connections. It builds the application's service (its own flags included), as resume
and settle do, to run their operations. SIGINT or SIGTERM stops it: requests in flight finish
(up to 10s).`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return c.console(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8081", "address to listen on (port 0 picks a free port)")
	fl.DurationVar(&f.lease, "lease", 30*time.Second, "the lease a resume from the console holds on a key")
	c.appFlags(cmd)
	return cmd
}

func (c *cli) console(cmd *cobra.Command, f *consoleFlags) error {
	token := strings.TrimSpace(c.env.Getenv(envConsoleToken))
	if token == "" {
		return usageErrorf("%s is not set: the console lets in only who has that token", envConsoleToken)
	}
	if err := checkLease(f.lease); err != nil {
		return err
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
	// The console resumes and settles: it needs the application's operations.
	svc, err := c.build(ctx, cmd, &BuildParams{Pool: pool, Lease: f.lease, Logger: logger, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return err
	}
	river, err := worker.NewInsertOnlyClient(pool)
	if err != nil {
		return err
	}
	con, err := console.New(&console.Config{Client: svc.Client, River: river, Token: token, Name: c.app.Name, Logger: logger})
	if err != nil {
		return err
	}
	if err := con.Start(ctx); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", f.addr, err)
	}
	// An answer may take as long as a resume can (a phase, a call cut at two thirds of the
	// lease, the next phase).
	srv := newHTTPServer(con, &serverOpts{WriteTimeout: max(time.Minute, 2*f.lease), Logger: logger})
	fmt.Fprintf(c.env.Stdout, "%s console: listening on http://%s\n", c.app.Name, ln.Addr())
	logger.Info("console serving", "addr", ln.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("console server stopped: %w", err)
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
