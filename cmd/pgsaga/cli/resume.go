package cli

import (
	"encoding/json"
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
	json          bool
	// The bulk form.
	stuck     bool
	operation string
	limit     int
}

func (c *cli) resumeCmd() *cobra.Command {
	f := &resumeFlags{}
	cmd := &cobra.Command{
		Use:   "resume (--tenant T --actor A KEY | --stuck [--operation OP] [--tenant T] [--limit N])",
		Short: "Resume a stuck or parked request now, or every stuck one",
		Long: `Resumes one key now: takes its lease (a started key whose lease expired, or a key parked as
failed), continues from its recovery point through the remaining phases, and prints the final
stored response (status line, then body; with --json, {"status","body"} with the body as the
stored JSON value). Before calling a gateway again after an attempt that may have reached it,
the operation asks the gateway first when it can, so a resume never charges twice. A
completed key prints its stored response and changes nothing. While another process holds a
live lease on the key it refuses (exit 1) and changes nothing. A failure the next attempt may
fix leaves the key started (exit 1).

With --stuck, resumes every stuck key (started with an expired lease, or parked as failed),
newest first, as keys --stuck lists them (--operation, --tenant and --limit filter them), one
after the other, and prints one line per key: "TENANT ACTOR KEY 201 Created", or
"TENANT ACTOR KEY error: why" for a key that did not finish (with --json,
{"results":[{"tenant","actor","key","status","body","error"}]}). It exits 1 when any key did
not finish. On a terminal, a bulk resume that runs longer than a second shows its progress on
stderr.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			check := f.checkOne
			if f.stuck {
				check = f.checkStuck
			}
			if err := check(cmd, args); err != nil {
				return err
			}
			defer c.tracing.shutdown()
			pool, svc, err := c.openForResume(cmd, f)
			if err != nil {
				return err
			}
			defer pool.Close()
			if f.stuck {
				return c.resumeStuck(cmd, f, pool, svc)
			}
			return c.resumeOne(cmd, f, pool, svc, saga.Scope{Tenant: f.tenant, Actor: f.actor}, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tenant, "tenant", "", "the key's tenant (required for one key; with --stuck, only this tenant's keys)")
	fl.StringVar(&f.actor, "actor", "", "the key's actor (required for one key)")
	fl.DurationVar(&f.lease, "lease", 30*time.Second, "the lease this resume holds on each key")
	fl.BoolVar(&f.json, "json", false, `print {"status","body"} as JSON ({"results":[…]} with --stuck)`)
	fl.BoolVar(&f.stuck, "stuck", false, "resume every stuck key: started with an expired lease, or failed")
	fl.StringVar(&f.operation, "operation", "", "with --stuck, only keys of this operation")
	fl.IntVar(&f.limit, "limit", 100, "with --stuck, at most this many keys (0: no limit)")
	c.appFlags(cmd)
	return cmd
}

// checkOne checks the single-key form: KEY, --tenant and --actor, none of the bulk filters.
func (f *resumeFlags) checkOne(cmd *cobra.Command, args []string) error {
	if err := exactArgs(1, "the KEY argument")(cmd, args); err != nil {
		return err
	}
	if err := required("tenant", f.tenant, "actor", f.actor); err != nil {
		return err
	}
	for _, name := range []string{"operation", "limit"} {
		if cmd.Flags().Changed(name) {
			return usageErrorf("--%s goes with --stuck", name)
		}
	}
	return checkLease(f.lease)
}

// checkStuck checks the bulk form: no KEY, no --actor.
func (f *resumeFlags) checkStuck(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q: --stuck resumes every stuck key", args[0])
	}
	if f.actor != "" {
		return usageErrorf("--actor names one key's actor: use it without --stuck, with --tenant and KEY")
	}
	if f.limit < 0 {
		return usageErrorf("invalid --limit %d: want 0 (no limit) or more", f.limit)
	}
	return checkLease(f.lease)
}

// openForResume starts tracing (when the environment asks for it), opens the migrated database
// and builds the application's service, for both forms of resume. The caller closes the pool,
// then shuts tracing down.
func (c *cli) openForResume(cmd *cobra.Command, f *resumeFlags) (*pgxpool.Pool, *Service, error) {
	logger, err := c.logger(logOneShot)
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.startTracing(cmd.Context(), cmd.Name(), logger); err != nil {
		return nil, nil, err
	}
	pool, err := c.connectMigrated(cmd.Context())
	if err != nil {
		return nil, nil, err
	}
	svc, err := c.build(cmd.Context(), cmd, &BuildParams{Pool: pool, Lease: f.lease, Logger: logger, Registerer: prometheus.NewRegistry()})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return pool, svc, nil
}

func (c *cli) resumeOne(cmd *cobra.Command, f *resumeFlags, pool *pgxpool.Pool, svc *Service, scope saga.Scope, key string) error {
	ctx := cmd.Context()
	if _, err := readKey(ctx, pool, scope, key); err != nil {
		return err
	}
	res, err := svc.Client.Resume(ctx, scope, key, &saga.ResumeOpts{Parked: true, By: operatorName(c.env)})
	if err != nil {
		return resumeError(scope, key, err)
	}
	return c.printResponse(res.Response, f.json)
}

// resumeResultJSON is one key of `resume --stuck --json`: status and body when it finished,
// error when it did not.
type resumeResultJSON struct {
	Tenant string          `json:"tenant"`
	Actor  string          `json:"actor"`
	Key    string          `json:"key"`
	Status *int            `json:"status"`
	Body   json.RawMessage `json:"body"`
	Error  *string         `json:"error"`
}

func (c *cli) resumeStuck(cmd *cobra.Command, f *resumeFlags, pool *pgxpool.Pool, svc *Service) error {
	ctx := cmd.Context()
	keys, err := listKeys(ctx, pool, &keyFilter{stuck: true, operation: f.operation, tenant: f.tenant, limit: f.limit})
	if err != nil {
		return err
	}
	bar := c.newProgress("resuming stuck keys", "keys", len(keys), f.json)
	results := make([]resumeResultJSON, 0, len(keys))
	failed := 0
	for _, k := range keys {
		r := resumeResultJSON{Tenant: k.Scope.Tenant, Actor: k.Scope.Actor, Key: k.Key}
		line := fmt.Sprintf("%s %s %s ", visible(r.Tenant), visible(r.Actor), visible(r.Key))
		res, err := svc.Client.Resume(ctx, k.Scope, k.Key, &saga.ResumeOpts{Parked: true, By: operatorName(c.env)})
		if err != nil {
			failed++
			msg := oneLine(resumeError(k.Scope, k.Key, err).Error())
			r.Error = &msg
			line += "error: " + visible(msg)
		} else {
			resp := renderResponse(res.Response)
			r.Status, r.Body = &resp.Status, resp.Body
			line += statusLine(resp.Status)
		}
		results = append(results, r)
		if !f.json {
			bar.println(c.env.Stdout, line)
		}
		bar.add(1)
	}
	bar.finish()
	switch {
	case f.json:
		if err := writeJSON(c.env.Stdout, map[string][]resumeResultJSON{"results": results}); err != nil {
			return err
		}
	case len(keys) == 0:
		fmt.Fprintln(c.env.Stdout, "no stuck keys")
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d stuck keys did not finish", failed, len(keys))
	}
	return nil
}

// resumeError explains why a resume did not finish.
func resumeError(scope saga.Scope, key string, err error) error {
	var (
		inProgress *saga.InProgressError
		transient  *saga.TransientError
	)
	switch {
	case errors.As(err, &inProgress):
		return fmt.Errorf("key %q is held by another process (its lease expires in %s): not resumed; try again later",
			key, roughDuration(inProgress.LeaseRemaining))
	case errors.Is(err, saga.ErrKeyNotFound):
		return noKeyError(scope, key)
	case errors.Is(err, saga.ErrLeaseLost):
		return fmt.Errorf("key %q was taken over by another process while this resume ran: not finished here", key)
	case errors.As(err, new(*saga.ParkedError)):
		if parked := (*saga.ParkedError)(nil); errors.As(err, &parked) {
			return fmt.Errorf("key %q is parked (%s): %s", key, parked.Reason, orDash(parked.LastError))
		}
		return fmt.Errorf("key %q is parked: see `show`", key)
	case errors.As(err, &transient):
		return fmt.Errorf("key %q did not finish (%v); it stays started and may be resumed again", key, transient.Err)
	}
	return fmt.Errorf("error resuming key %q: %w", key, err)
}

// operatorName is who runs the command, for the key's history: $USER (or $LOGNAME), else
// "operator".
func operatorName(env *Env) string {
	for _, name := range []string{"USER", "LOGNAME"} {
		if v := env.Getenv(name); v != "" {
			return v
		}
	}
	return "operator"
}
