package cli_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing/fstest"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/pflag"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// shopApp is an application's own binary: its tables, its operations, its own --receipt-prefix
// flag on the commands that build its service, pgsaga's commands.
// Its main is `func main() { os.Exit(cli.Main(shopApp())) }`.
func shopApp() *cli.App {
	tables := fstest.MapFS{
		"001_receipts.up.sql":   {Data: []byte(`CREATE TABLE receipts (id text PRIMARY KEY, tenant_id text NOT NULL, total bigint NOT NULL)`)},
		"001_receipts.down.sql": {Data: []byte(`DROP TABLE receipts`)},
	}
	issueReceipt := func(prefix string) *phases.Operation {
		return &phases.Operation{
			Name: "issue_receipt",
			Steps: []phases.Step{
				phases.Atomic("receipt_issued", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
					id := prefix + uuid.NewString()
					if _, err := tx.Exec(ctx, `INSERT INTO receipts (id, tenant_id, total) VALUES ($1, $2, 100)`, id, run.Tenant()); err != nil {
						return err
					}
					return run.Respond(http.StatusCreated, map[string]string{"id": id})
				}),
			},
		}
	}
	return &cli.App{
		Name:       "shop",
		Migrations: []migrations.Line{{Name: "shop", FS: tables}},
		// serve, worker and resume get --receipt-prefix; Build reads it from p.Flags.
		Flags: func(command string, flags *pflag.FlagSet) {
			flags.String("receipt-prefix", "rcpt_", "prefix of new receipt ids")
		},
		Build: func(ctx context.Context, p *cli.BuildParams) (*cli.Service, error) {
			prefix, err := p.Flags.GetString("receipt-prefix")
			if err != nil {
				return nil, err
			}
			client, err := saga.NewClient(&saga.Config{
				DB:         p.Pool,
				Operations: []*phases.Operation{issueReceipt(prefix)},
				Lease:      p.Lease,
				Logger:     p.Logger,
				Observer:   p.Observer,
				// --database-pooling and --listen-database-url (see BuildParams).
				TransactionPooling: p.TransactionPooling,
				ListenDB:           p.ListenPool,
			})
			if err != nil {
				return nil, err
			}
			// The handler is a plain http.Handler: here under chi. The scope comes from
			// serve's authentication (p.Scope: the request's API key, whose tenant is a shop),
			// and the shop in the route must be the key's.
			h, err := client.Handler("issue_receipt", &saga.HandlerOpts{Scope: func(r *http.Request) (saga.Scope, error) {
				scope, err := p.Scope(r)
				if err != nil {
					return saga.Scope{}, err
				}
				if shop := chi.URLParam(r, "shop"); shop != scope.Tenant {
					return saga.Scope{}, errors.New("this API key is not one of shop " + shop)
				}
				return scope, nil
			}})
			if err != nil {
				return nil, err
			}
			r := chi.NewRouter()
			r.Method(http.MethodPost, "/shops/{shop}/receipts", h)
			return &cli.Service{Client: client, Handler: r}, nil
		},
	}
}

// An application builds pgsaga's commands into its own binary with its own operations: `shop
// migrate` adds its receipts table, `shop serve` serves POST /shops/{shop}/receipts
// idempotently (routed by chi), `shop
// worker` and `shop resume` resume its keys, and all three take its --receipt-prefix. Run runs one command line and returns the exit
// status, as Main does with os.Args; errors are one line on stderr.
func Example() {
	app := shopApp()
	env := &cli.Env{Stdout: os.Stdout, Stderr: os.Stdout, Getenv: os.Getenv}
	code := cli.Run(context.Background(), app, []string{"show", "--actor", "alice", "some-key-0001"}, env)
	fmt.Println("exit status", code)
	// Output:
	// shop show: required flag --tenant not set (see shop show --help)
	// exit status 2
}

// Without --database-url or $DATABASE_URL, a command that needs a database is bad usage.
func ExampleRun_noDatabase() {
	env := &cli.Env{Stdout: os.Stdout, Stderr: os.Stdout} // no environment: DATABASE_URL is unset
	code := cli.Run(context.Background(), &cli.App{}, []string{"keys", "--stuck"}, env)
	fmt.Println("exit status", code)
	// Output:
	// pgsaga keys: no database: set --database-url, --database-url-file or DATABASE_URL (see pgsaga keys --help)
	// exit status 2
}
