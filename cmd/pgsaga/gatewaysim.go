package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

// envSimControlToken is the gateway simulator's control token: gateway-sim --control-token's
// default, and what --gateway-url's client sends to the simulator's control endpoints.
const envSimControlToken = "PGSAGA_SIM_CONTROL_TOKEN"

func (c *cli) gatewaySimCmd() *cobra.Command {
	var (
		addr                                string
		idempotency, inquiry                bool
		latency, latencyJitter              time.Duration
		latencyBefore, pendingFor           time.Duration
		failBefore, loseRespone, pendingPct float64
		declineOver                         int64
		seed                                uint64
		controlToken                        string
	)
	cmd := &cobra.Command{
		Use:   "gateway-sim",
		Short: "Run the payment gateway simulator over HTTP",
		Long: `Runs the stateful payment gateway simulator (gateway/sim) over HTTP until SIGINT or SIGTERM.
Its ledger lives in memory for the life of the process. Endpoints: POST /charges,
GET /charges?reference=R (inquiry), GET /charges?since=RFC3339 (the list of charges, oldest
first; served with --inquiry=false too), GET /charges/{id}, GET /_sim/ledger, GET /_sim/info,
POST /_sim/faults. Prints "<name> gateway-sim: listening on http://ADDR" on stdout once it
accepts connections (--addr 127.0.0.1:0 picks a free port). --fail-before, --lose-response and
--pending are probabilities in [0, 1]. It needs no database.

Anyone who reaches its port may change its faults, unless --control-token (default
$` + envSimControlToken + `, which keeps it out of the process list) is set: then GET /_sim/ledger,
GET /_sim/info and POST /_sim/faults need "Authorization: Bearer <token>" (401 otherwise), and
the commands that charge through it with --gateway-url send the token they find in
$` + envSimControlToken + `.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := &sim.Config{
				Idempotency: &idempotency,
				Inquiry:     &inquiry,
				Faults: sim.Faults{
					Latency:       latency,
					LatencyJitter: latencyJitter,
					FailBefore:    failBefore,
					LoseResponse:  loseRespone,
					DeclineOver:   declineOver,
					LatencyBefore: latencyBefore,
					Pending:       pendingPct,
				},
				PendingFor:   pendingFor,
				Seed:         seed,
				ControlToken: controlToken,
			}
			if controlToken == "" {
				cfg.ControlToken = strings.TrimSpace(c.env.Getenv(envSimControlToken))
			}
			if err := cfg.Validate(); err != nil {
				return usageErrorf("%v", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("error listening on %s: %w", addr, err)
			}
			fmt.Fprintf(c.env.Stdout, "%s gateway-sim: listening on http://%s\n", c.app.Name, ln.Addr())
			return sim.New(cfg).Serve(ctx, ln)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", "127.0.0.1:9090", "address to listen on (port 0 picks a free port)")
	fl.BoolVar(&idempotency, "idempotency", true, "honour Idempotency-Key: a repeated key returns the first answer and charges nothing")
	fl.BoolVar(&inquiry, "inquiry", true, "serve GET /charges?reference=R (404 when false)")
	fl.DurationVar(&latency, "latency", 0, "delay every charge response after the charge is created")
	fl.DurationVar(&latencyJitter, "latency-jitter", 0, "add a uniform random 0..N to --latency")
	fl.Float64Var(&failBefore, "fail-before", 0, "probability of a 503 without charging")
	fl.Float64Var(&loseRespone, "lose-response", 0, "probability that a charge is created and its response lost")
	fl.Int64Var(&declineOver, "decline-over", 0, "decline amounts above this (0: never decline)")
	fl.Float64Var(&pendingPct, "pending", 0, "probability that a charge is created pending (it turns final after --pending-for)")
	fl.DurationVar(&pendingFor, "pending-for", 2*time.Second, "how long a pending charge stays pending")
	fl.DurationVar(&latencyBefore, "latency-before", 0, "hold every charge request this long before the charge is created (reported as max_in_flight_ms)")
	fl.Uint64Var(&seed, "seed", 0, "seed of the fault probabilities, to replay the same faults")
	fl.StringVar(&controlToken, "control-token", "", "require Authorization: Bearer <token> on /_sim/* (default $"+envSimControlToken+"; none: open)")
	return cmd
}
