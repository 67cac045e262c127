package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/saga"
)

type resumeFlags struct {
	tenant, actor string
	lease         time.Duration
}

func (c *cli) resumeCmd() *cobra.Command {
	f := &resumeFlags{}
	cmd := &cobra.Command{
		Use:   "resume --tenant T --actor A KEY",
		Short: "Resume a stuck or parked request now",
		Long: `Resumes one key now: takes its lease (a started key whose lease expired, or a key parked as
failed), continues from its recovery point through the remaining phases, and prints the final
stored response (status line, then body). Before calling a gateway again after an attempt
that may have reached it, the operation asks the gateway first when it can, so a resume never
charges twice. A completed key prints its stored response and changes nothing. While another
process holds a live lease on the key it refuses (exit 1) and changes nothing. A failure the
next attempt may fix leaves the key started (exit 1).`,
		Args: exactArgs(1, "the KEY argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required("tenant", f.tenant, "actor", f.actor); err != nil {
				return err
			}
			if err := checkLease(f.lease); err != nil {
				return err
			}
			return c.resume(cmd, f, saga.Scope{Tenant: f.tenant, Actor: f.actor}, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tenant, "tenant", "", "the key's tenant (required)")
	fl.StringVar(&f.actor, "actor", "", "the key's actor (required)")
	fl.DurationVar(&f.lease, "lease", 30*time.Second, "the lease this resume holds on the key")
	c.appFlags(cmd)
	return cmd
}

func (c *cli) resume(cmd *cobra.Command, f *resumeFlags, scope saga.Scope, key string) error {
	ctx := cmd.Context()
	logger, err := c.logger(logOneShot)
	if err != nil {
		return err
	}
	pool, err := c.connectMigrated(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := readKey(ctx, pool, scope, key); err != nil {
		return err
	}
	svc, err := c.build(ctx, cmd, &BuildParams{Pool: pool, Lease: f.lease, Logger: logger, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return err
	}
	res, err := svc.Client.Resume(ctx, scope, key, &saga.ResumeOpts{Parked: true})
	if err != nil {
		return resumeError(ctx, pool, scope, key, err)
	}
	fmt.Fprintln(c.env.Stdout, statusLine(res.Response.Status))
	_, err = fmt.Fprintf(c.env.Stdout, "%s\n", res.Response.Body)
	return err
}

// resumeError explains why a resume did not finish.
func resumeError(ctx context.Context, pool *pgxpool.Pool, scope saga.Scope, key string, err error) error {
	var (
		inProgress *saga.InProgressError
		transient  *saga.TransientError
	)
	switch {
	case errors.As(err, &inProgress):
		return fmt.Errorf("key %q is held by another process (its lease expires in %s): not resumed; try again later",
			key, roughDuration(inProgress.RetryAfter))
	case errors.Is(err, saga.ErrKeyNotFound):
		return noKeyError(scope, key)
	case errors.Is(err, saga.ErrParked):
		reason := "see `show`"
		if k, readErr := readKey(ctx, pool, scope, key); readErr == nil && k.LastError != "" {
			reason = k.LastError
		}
		return fmt.Errorf("key %q failed again and is parked: %s", key, reason)
	case errors.As(err, &transient):
		return fmt.Errorf("key %q did not finish (%v); it stays started and may be resumed again", key, transient.Err)
	}
	return fmt.Errorf("error resuming key %q: %w", key, err)
}
