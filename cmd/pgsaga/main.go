package main

import (
	"os"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
)

func main() { os.Exit(cli.Main(cli.PaymentsApp())) }
