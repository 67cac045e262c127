package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg := &Config{}
	fs := flag.NewFlagSet("pgsaga-chaos", flag.ContinueOnError)
	cfg.bindFlags(fs)
	quiet := fs.Bool("quiet", false, "print only the summary, not the timeline as it goes")
	judgeFile := fs.String("judge", "", "judge the evidence a run recorded (its evidence.json) again, and run nothing")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./soak/pgsaga-chaos [flags]\n\n%s\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "pgsaga-chaos: unexpected argument %q\n", fs.Arg(0))
		os.Exit(2)
	}
	if *judgeFile != "" {
		ev, err := readEvidence(*judgeFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgsaga-chaos: %v\n", err)
			os.Exit(1)
		}
		v := judge(ev)
		fmt.Print(v)
		if !v.pass() {
			os.Exit(1)
		}
		return
	}
	if !*quiet {
		cfg.Progress = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgsaga-chaos: %v\n", err)
		os.Exit(1)
	}
	fmt.Print(s)
	if !s.pass() {
		os.Exit(1)
	}
}

const usage = `Runs pgsaga's chaos soak: a throwaway PostgreSQL (or, with -cluster, a Patroni pair failed
over every -failover-every), an inquiry-only gateway simulator with pending charges and slow,
lost and refused requests, two serve and two worker processes of the real pgsaga binary, and
clients of two tenants paying invoices with one idempotency key per intent, while processes are
killed (-9) and frozen (SIGSTOP), the database is paused for most of a lease and restarted. Then
it drains (the workers, the clients' retries, an operator settling parked keys from the ledger),
runs reconciliation, judges the evidence it recorded (evidence.json: no double charge, no lost
intent, every answer the same, the books balanced), prints the figures, and exits 1 on any
violation. -judge FILE judges a recorded evidence.json again.`
