package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

type settleFlags struct {
	tenant, actor string
	outcome, note string
	reference     string
	json          bool
	lease         time.Duration
}

func (c *cli) settleCmd() *cobra.Command {
	f := &settleFlags{}
	cmd := &cobra.Command{
		Use:   "settle --tenant T --actor A --outcome succeeded|failed --note TEXT [--reference R] KEY",
		Short: "Finish a parked request by an operator's decision",
		Long: `Finishes one parked key (state failed) whose outcome nothing could resolve — no inquiry, no
idempotency keys, a downstream key past the provider's window — by your decision, after you
looked at the provider: runs the operation's settle hook in one transaction with the outcome,
stores the response it sets, completes the key and records who, what and why in the key's
history (see show). Prints the stored response (status line, then body), or {"status","body"}
with --json. The client's retries then replay it.

The example payments: --outcome succeeded records the payment with the provider's charge id
(--reference, required) and answers 201; --outcome failed marks it failed, releases the
invoice's reservation and answers 402 payment_failed.

Refuses (exit 1) a key that is not parked, whose operation has no settle hook, or that the hook
refuses. --outcome and --note are required.`,
		Args: exactArgs(1, "the KEY argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required("tenant", f.tenant, "actor", f.actor, "outcome", f.outcome, "note", f.note); err != nil {
				return err
			}
			switch phases.SettleOutcome(f.outcome) {
			case phases.SettleSucceeded, phases.SettleFailed:
			default:
				return usageErrorf("invalid --outcome %q: want succeeded or failed", f.outcome)
			}
			if err := checkLease(f.lease); err != nil {
				return err
			}
			return c.settle(cmd, f, saga.Scope{Tenant: f.tenant, Actor: f.actor}, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tenant, "tenant", "", "the key's tenant (required)")
	fl.StringVar(&f.actor, "actor", "", "the key's actor (required)")
	fl.StringVar(&f.outcome, "outcome", "", "what happened: succeeded or failed (required)")
	fl.StringVar(&f.note, "note", "", "why you decided so, for the key's history (required)")
	fl.StringVar(&f.reference, "reference", "", "the provider's reference for what happened (a charge id)")
	fl.BoolVar(&f.json, "json", false, `print the stored response as {"status","body"}`)
	fl.DurationVar(&f.lease, "lease", 30*time.Second, "the lease of the operations' client")
	c.appFlags(cmd)
	return cmd
}

func (c *cli) settle(cmd *cobra.Command, f *settleFlags, scope saga.Scope, key string) error {
	ctx := cmd.Context()
	logger, err := c.logger(logOneShot)
	if err != nil {
		return err
	}
	if _, err := c.startTracing(ctx, cmd.Name(), logger); err != nil {
		return err
	}
	defer c.tracing.shutdown()
	pool, err := c.connectMigrated(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	svc, err := c.build(ctx, cmd, &BuildParams{Pool: pool, Lease: f.lease, Logger: logger, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return err
	}
	res, err := svc.Client.Settle(ctx, scope, key, &saga.SettleParams{
		Outcome: phases.SettleOutcome(f.outcome), Note: f.note, Reference: f.reference, By: operatorName(c.env),
	})
	if err != nil {
		return settleError(scope, key, err)
	}
	return c.printResponse(res.Response, f.json)
}

// settleError explains why a settlement was refused, in one line.
func settleError(scope saga.Scope, key string, err error) error {
	if errors.Is(err, saga.ErrKeyNotFound) {
		return noKeyError(scope, key)
	}
	var refused *saga.RefusedError
	if !errors.As(err, &refused) {
		return fmt.Errorf("error settling key %q: %w", key, err)
	}
	if refused.Reason == saga.RefusedBySettleHook {
		return fmt.Errorf("key %q was not settled: %v", key, refused.Err)
	}
	// Not parked, or an operation without a settle hook: the refusal says which.
	return fmt.Errorf("key %q cannot be settled: %v", key, refused)
}

// printResponse prints a stored response: its status line then its body, or {"status","body"}.
func (c *cli) printResponse(r *saga.Response, asJSON bool) error {
	if asJSON {
		return writeJSON(c.env.Stdout, renderResponse(r))
	}
	fmt.Fprintln(c.env.Stdout, statusLine(r.Status))
	_, err := fmt.Fprintf(c.env.Stdout, "%s\n", visibleText(string(r.Body)))
	return err
}
