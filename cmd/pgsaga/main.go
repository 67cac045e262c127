package main

import (
	"os"

	"github.com/spf13/cobra"

	sagacli "github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/examples/payments"
)

func main() { os.Exit(sagacli.Main(pgsagaApp())) }

// pgsagaApp is the pgsaga binary: pgsaga's operator commands with the example payments service
// (examples/payments) built in, so that serve, worker, resume and settle work out of the box,
// its --gateway-url flag on those, and the binary's own gateway-sim and demo.
func pgsagaApp() *sagacli.App {
	app := &sagacli.App{
		Name:       "pgsaga",
		Migrations: payments.Migrations().Lines,
		Flags:      addPaymentsFlags,
		Build:      buildPayments,
	}
	app.Commands = func(env *sagacli.Env) []*cobra.Command {
		c := &cli{app: app, env: env}
		return []*cobra.Command{c.gatewaySimCmd(), c.demoCmd()}
	}
	return app
}

// cli is what the binary's own commands (gateway-sim, demo) share with the command tree: the
// app and the tree's environment.
type cli struct {
	app *sagacli.App
	env *sagacli.Env
}

// envDatabaseURL is the environment variable --database-url defaults to.
const envDatabaseURL = "DATABASE_URL"

// usageErrorf is a bad command line: exit 2.
var usageErrorf = sagacli.UsageErrorf

// noArgs refuses positional arguments as bad usage.
var noArgs = sagacli.NoArgs

// openPool connects to url as the operator's commands do.
var openPool = sagacli.Connect

// database is cmd's database URL and pooling, as the operator's commands read them.
var database = sagacli.Database
