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
		olderThan, tombstones time.Duration
		dryRun, json          bool
	)
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete completed keys past their retention",
		Long: `Deletes completed keys past their retention window, in batches: each key's own window (the
operation's Retention, 24h by default) or, with --older-than, keys completed longer ago than
that (--older-than 0s: every completed key). Started and failed keys are never deleted.
--dry-run counts and deletes nothing. Prints "deleted N keys" ("would delete N keys" with
--dry-run), or {"deleted":N} with --json. On a terminal, a gc that runs longer than a second
shows its progress on stderr. Each deleted key leaves a tombstone (its scope, a hash of the key,
a digest of the request) until --tombstone-retention after its completion: a client retrying the
same request is answered 410 idempotency_key_expired and nothing runs (another request under the
key: 422). Tombstones past that window are deleted by the same run. GC's cost per key does not
grow with the table: by expiry it walks an index from where its last batch stopped; by
--older-than it reads the table once.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if olderThan < 0 {
				return usageErrorf("--older-than must not be negative, got %s", olderThan)
			}
			if tombstones <= 0 {
				return usageErrorf("--tombstone-retention must be positive, got %s", tombstones)
			}
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				ctx := cmd.Context()
				reader, err := newReader(pool)
				if err != nil {
					return err
				}
				bar := c.newProgress("deleting completed keys", "keys", -1, json)
				p := &saga.KeyDeleteExpiredParams{DryRun: dryRun, OnBatch: bar.set, TombstoneRetention: tombstones}
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
	cmd.Flags().DurationVar(&tombstones, "tombstone-retention", saga.DefaultTombstoneRetention, "how long after its completion a deleted key's tombstone answers a retry 410 idempotency_key_expired")
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
