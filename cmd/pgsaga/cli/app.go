package cli

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// App is what an application plugs into the commands: its migrations, how to build its
// service, and its own flags and commands. The zero App has no operations of its own: migrate,
// keys, show and gc work; serve, worker, resume, settle and reconcile need Build.
//
// The commands are operator tools and carry nothing of an application: the pgsaga binary adds
// its example payments service, its --gateway-url flag and its gateway-sim and demo commands
// through Build, Flags and Commands, as any application does (see cmd/pgsaga).
type App struct {
	// Name is the command's name in usage lines and error messages. Defaults to "pgsaga".
	Name string
	// Migrations are the application's extra migration lines, applied after River's and
	// pgsaga's own. Defaults to none.
	Migrations []migrations.Line
	// Flags adds the application's own flags to each command that builds the service (serve,
	// worker, resume, settle and reconcile): command is the command's name, flags its flag set. Define flags
	// without binding them to variables (flags.String, not flags.StringVar): Build reads their
	// values from BuildParams.Flags, so one App can run any number of command lines at once.
	// Called each time a command tree is made. Defaults to nil: no flags of its own.
	Flags func(command string, flags *pflag.FlagSet)
	// Build constructs the application's service for serve, worker, resume, settle and reconcile: the saga client
	// holding its operations and the HTTP handler serving its API. It is called once per
	// command run. Its error is the command's one-line error, printed as it is: make it say
	// what failed. Defaults to nil: those commands then fail with a clear message.
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
	// Command is the name of the command being run: serve, worker, resume, settle or reconcile.
	Command string
	// Flags are the command's parsed flags, the application's own (App.Flags) among them:
	// read them with Flags.GetString and its siblings.
	Flags *pflag.FlagSet
	// Pool is the database, checked to be migrated.
	Pool *pgxpool.Pool
	// Lease is the key lease chosen by --lease.
	Lease time.Duration
	// Logger is the command's logger (stderr).
	Logger *slog.Logger
	// Registerer receives the service's own metrics; serve exposes them on /metrics of its
	// operations address (--ops-addr).
	Registerer prometheus.Registerer
	// Observer feeds pgsaga's metrics to Registerer: give it to saga.Config.Observer.
	Observer saga.Observer
	// Scope authenticates each request of the service's API: give it to saga.HandlerOpts.Scope
	// and use it in the application's own routes. For serve it is the request's API key
	// ("Authorization: Bearer <secret>", made by `apikey create`), or with
	// --insecure-scope-headers the X-Tenant-ID and X-Actor-ID headers. The other commands serve
	// no API: theirs refuses every request. Never nil.
	Scope saga.ScopeFunc
	// Outbox inserts outbox events in the caller's transaction (Outbox.EmitTx); any worker
	// delivers them, whether or not this process also runs one.
	Outbox *worker.Outbox
	// Getenv looks up the command's environment (Env.Getenv), for settings such as secrets
	// that do not belong on a command line.
	Getenv func(string) string
	// TracerProvider receives the spans of the service's saga client: pass it on as
	// saga.Config.TracerProvider. It is nil when tracing is off (the OpenTelemetry environment
	// asks for no spans).
	TracerProvider trace.TracerProvider
	// TransactionPooling is true when Pool goes through a pooler in transaction pooling mode
	// (--database-pooling=transaction). Pass it to saga.Config.TransactionPooling: the command
	// refuses a saga client that does not run as its flags say.
	TransactionPooling bool
	// ListenPool is serve's --listen-database-url, a direct connection where the bounded wait
	// for a request in flight listens; nil without it (and for the other commands). Pass it to
	// saga.Config.ListenDB.
	ListenPool *pgxpool.Pool
	// AuthRefused reports a request the application's own routes refused to authenticate (a
	// webhook whose signature does not verify) on surface (such as "webhook") for reason (a
	// stable code, from a small fixed set: it is a metric label). serve counts it in
	// pgsaga_auth_failures_total{surface,reason} and logs it, at a bounded rate, with the
	// client's address; never pass it a secret. Never nil.
	AuthRefused func(r *http.Request, surface, reason string)
}

// Service is an application's service as the commands run it.
type Service struct {
	// Client runs and resumes the application's operations. Required.
	Client *saga.Client
	// Handler serves the application's API (serve mounts it at /). Required for serve.
	Handler http.Handler
	// Lister lists the charges of the application's payment provider, for reconciliation:
	// `reconcile` reads it, and the worker's periodic reconciliation runs when it is set.
	// Defaults to nil: reconcile fails, and the worker does not reconcile.
	Lister gateway.Lister
	// Party names the party a request of Handler belongs to for serve's fair share of its
	// in-flight slots, when Handler authenticates that request itself (a webhook's source,
	// once its signature verifies). serve calls it once the request's whole body is read (body;
	// the handler reads it again from r.Body), before the request takes a slot, so make it
	// cheap and let it read nothing else. "" leaves the request to serve: the tenant of its API
	// key, else the anonymous party. Defaults to nil: serve's rule for every request.
	Party func(r *http.Request, body []byte) string
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
