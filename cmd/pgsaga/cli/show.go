package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/saga"
)

func (c *cli) showCmd() *cobra.Command {
	var (
		tenant, actor string
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "show --tenant T --actor A KEY",
		Short: "Show one idempotency key",
		Long: `Shows one key of (tenant, actor): state, recovery point, attempts, lease, last error and
stored response. With --json, the key as one JSON document. A key that does not exist is a
failure (exit 1). --tenant and --actor are required. Read-only.`,
		Args: exactArgs(1, "the KEY argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required("tenant", tenant, "actor", actor); err != nil {
				return err
			}
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				ctx := cmd.Context()
				k, err := readKey(ctx, pool, saga.Scope{Tenant: tenant, Actor: actor}, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(c.env.Stdout, renderKeyDetail(k))
				}
				return c.printKey(k)
			})
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the key's tenant (required)")
	cmd.Flags().StringVar(&actor, "actor", "", "the key's actor (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the key as JSON")
	return cmd
}

// readKey reads one key; a missing key is an error naming it.
func readKey(ctx context.Context, pool *pgxpool.Pool, scope saga.Scope, key string) (*saga.Key, error) {
	reader, err := newReader(pool)
	if err != nil {
		return nil, err
	}
	k, err := reader.KeyGet(ctx, scope, key)
	if errors.Is(err, saga.ErrKeyNotFound) {
		return nil, noKeyError(scope, key)
	}
	if err != nil {
		return nil, fmt.Errorf("error reading key %q: %w", key, err)
	}
	return k, nil
}

func noKeyError(scope saga.Scope, key string) error {
	return fmt.Errorf("no key %q for tenant %s actor %s", key, scope.Tenant, scope.Actor)
}

func (c *cli) printKey(k *saga.Key) error {
	tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
	// Every value is escaped (visible): a stored path or error may carry control characters.
	row := func(name, value string) { fmt.Fprintf(tw, "%s\t%s\n", name, visible(value)) }
	row("key", k.Key)
	row("tenant", k.Scope.Tenant)
	row("actor", k.Scope.Actor)
	row("operation", k.Operation)
	row("request", k.Method+" "+k.Path)
	row("state", string(k.Status))
	if k.ParkedReason != "" {
		row("parked because", string(k.ParkedReason))
	}
	row("recovery point", k.RecoveryPoint)
	row("attempts", fmt.Sprint(k.Attempts))
	row("lease", lease(k.DBNow, k))
	if k.Status == saga.KeyStatusStarted {
		if k.NextAttemptAt.After(k.DBNow) {
			row("next attempt", "in "+roughDuration(k.NextAttemptAt.Sub(k.DBNow)))
		} else {
			row("next attempt", "due")
		}
	}
	row("last error", oneLine(orDash(k.LastError)))
	row("created", ago(k.DBNow, k.CreatedAt)+" ("+k.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00")+")")
	row("updated", ago(k.DBNow, k.UpdatedAt)+" ("+k.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z07:00")+")")
	for _, call := range k.Calls {
		row("call", fmt.Sprintf("%s attempt %d, reference %s: %s%s", call.Step, call.Attempt, orDash(call.Reference),
			orDash(string(call.Outcome)), providerSuffix(call.ProviderID)))
	}
	for _, a := range k.History {
		row(string(a.Action), fmt.Sprintf("by %s %s%s", a.By, ago(k.DBNow, a.At), settleSuffix(a)))
	}
	if k.Response == nil {
		row("response", "none")
		return tw.Flush()
	}
	row("response", statusLine(k.Response.Status))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(c.env.Stdout, "%s\n", visibleText(string(k.Response.Body)))
	return err
}

func providerSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (provider " + id + ")"
}

func settleSuffix(a saga.KeyAction) string {
	if a.Action != saga.KeyActionSettle {
		return ""
	}
	out := ": " + string(a.Outcome) + ", " + oneLine(a.Note)
	if a.Reference != "" {
		out += ", reference " + a.Reference
	}
	return out
}
