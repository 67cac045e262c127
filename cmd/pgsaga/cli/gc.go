package cli

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/saga"
)

func (c *cli) gcCmd() *cobra.Command {
	var (
		olderThan    time.Duration
		dryRun, json bool
	)
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete completed keys past their retention",
		Long: `Deletes completed keys past their retention window, in batches: each key's own window (the
operation's Retention, 24h by default) or, with --older-than, keys completed longer ago than
that (--older-than 0s: every completed key). Started and failed keys are never deleted.
--dry-run counts and deletes nothing. Prints "deleted N keys" ("would delete N keys" with
--dry-run), or {"deleted":N} with --json. On a terminal, a gc that runs longer than a second
shows its progress on stderr. A client retrying a deleted key after this runs executes it
again: keep windows longer than your clients retry.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return usageErrorf("--older-than must not be negative, got %s", olderThan)
			}
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				ctx := cmd.Context()
				reader, err := newReader(pool)
				if err != nil {
					return err
				}
				bar := c.newProgress("deleting completed keys", "keys", -1, json)
				p := &saga.KeyDeleteExpiredParams{DryRun: dryRun, OnBatch: bar.set}
				if cmd.Flags().Changed("older-than") {
					// An explicit 0s means every completed key: "given", not "unset".
					p.OlderThan = &olderThan
				}
				n, err := reader.KeyDeleteExpired(ctx, p)
				bar.finish()
				if err != nil {
					return err
				}
				if json {
					return writeJSON(c.env.Stdout, map[string]int{"deleted": n})
				}
				verb := "deleted"
				if dryRun {
					verb = "would delete"
				}
				_, err = fmt.Fprintf(c.env.Stdout, "%s %d %s\n", verb, n, plural(n, "key", "keys"))
				return err
			})
		},
	}
	cmd.Flags().DurationVar(&olderThan, "older-than", 0, "delete keys completed longer ago than this, whatever their operation's retention (e.g. 24h; 0s: every completed key; default: each key's own window)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count the keys that would be deleted and delete nothing")
	cmd.Flags().BoolVar(&json, "json", false, `print {"deleted":N} as JSON`)
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
