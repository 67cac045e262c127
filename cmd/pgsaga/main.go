// Command pgsaga is pgsaga's command-line tool: migrations, the example payments API, the
// recovery worker, key inspection and resumption, retention GC, the gateway simulator and the
// zero-setup demo. It carries the example payment operations (examples/payments); the commands
// themselves live in package cli, so an application builds the same tool with its own
// operations. Run `pgsaga --help` for the list of commands.
package main

import (
	"os"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
)

func main() { os.Exit(cli.Main(cli.PaymentsApp())) }
