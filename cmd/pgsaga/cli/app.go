package cli

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// App is what an application plugs into the commands: its migrations and how to build its
// service. The zero App has no operations of its own: migrate, keys, show, gc, gateway-sim and
// demo work; serve, worker and resume need Build.
type App struct {
	// Name is the command's name in usage lines and error messages. Defaults to "pgsaga".
	Name string
	// Migrations are the application's extra migration lines, applied after River's and
	// pgsaga's own. Defaults to none.
	Migrations []migrations.Line
	// Build constructs the application's service for serve, worker and resume: the saga client
	// holding its operations and the HTTP handler serving its API. It is called once per
	// command run. Defaults to nil: those commands then fail with a clear message.
	Build func(ctx context.Context, p *BuildParams) (*Service, error)
	// Commands are the application's own commands, added beside pgsaga's (the pgsaga binary
	// adds gateway-sim and demo). It is called once per command tree, with that tree's
	// environment: a command writes to env.Stdout and env.Stderr and reads the environment
	// through env.Getenv. Every command inherits --database-url and --log-level. An error made
	// with UsageErrorf exits 2, any other error exits 1; either is printed on one line.
	// Defaults to nil: no commands of its own.
	Commands func(env *Env) []*cobra.Command
}

// BuildParams is what the commands hand to App.Build.
type BuildParams struct {
	// Pool is the database, checked to be migrated.
	Pool *pgxpool.Pool
	// Gateway is the payment gateway chosen by --gateway-url: the simulator over HTTP, or an
	// in-process simulator when the flag is not given.
	Gateway gateway.Gateway
	// Lease is the key lease chosen by --lease.
	Lease time.Duration
	// Logger is the command's logger (stderr).
	Logger *slog.Logger
	// Registerer receives the service's metrics; serve exposes them on /metrics.
	Registerer prometheus.Registerer
	// Outbox inserts outbox events in the caller's transaction (worker.EmitTx); any worker
	// delivers them. It is an insert-only River client, the same whether or not this process
	// also runs a worker.
	Outbox worker.Inserter
}

// Service is an application's service as the commands run it.
type Service struct {
	// Client runs and resumes the application's operations. Required.
	Client *saga.Client
	// Handler serves the application's API (serve mounts it at /). Required for serve.
	Handler http.Handler
}

// PaymentsApp is the example payments service (examples/payments) that the pgsaga binary
// carries, so that serve, worker and resume work out of the box.
func PaymentsApp() *App {
	return &App{
		Name:       "pgsaga",
		Migrations: payments.Migrations().Lines,
		Build: func(ctx context.Context, p *BuildParams) (*Service, error) {
			svc, err := payments.New(&payments.Config{
				Pool:       p.Pool,
				Gateway:    p.Gateway,
				Lease:      p.Lease,
				Logger:     p.Logger,
				Registerer: p.Registerer,
				// Every succeeded payment emits payment.succeeded in the transaction that
				// records it; `worker --webhook-url` delivers it.
				PaymentHooks: []payments.PaymentHook{payments.PaymentSucceededHook(p.Outbox)},
			})
			if err != nil {
				return nil, err
			}
			h, err := svc.Handler()
			if err != nil {
				return nil, err
			}
			return &Service{Client: svc.Client(), Handler: h}, nil
		},
	}
}

func (a *App) withDefaults() *App {
	out := App{}
	if a != nil {
		out = *a
	}
	if out.Name == "" {
		out.Name = "pgsaga"
	}
	return &out
}
