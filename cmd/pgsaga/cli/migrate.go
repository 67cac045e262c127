package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/migrations"
)

func (c *cli) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply River's, pgsaga's and the application's migrations",
		Long: `Applies every pending migration: River's (for the worker), pgsaga's own tables, then the
application's lines. Each version commits in its own transaction; concurrent runs are
serialised by an advisory lock. Running it on an up-to-date database changes nothing.

The lock belongs to a session, which a pooler in transaction pooling mode does not keep from
one transaction to the next: run migrate on a direct connection (or session pooling), never
with --database-pooling=transaction.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if c.transactionPooled() {
				return usageErrorf("migrate holds a session's advisory lock across its transactions, which a transaction pooler " +
					"does not keep: run it with a direct --database-url, without --database-pooling=transaction")
			}
			pool, err := c.connect(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			res, err := migrations.Migrate(ctx, pool, c.migrateOpts())
			if err != nil {
				return err
			}
			printMigrateResult(c, res)
			return nil
		},
	}
}

func printMigrateResult(c *cli, res *migrations.MigrateResult) {
	out := c.env.Stdout
	if len(res.RiverApplied) == 0 && len(res.Applied) == 0 {
		fmt.Fprintln(out, "already up to date")
		return
	}
	for _, v := range res.RiverApplied {
		fmt.Fprintf(out, "applied river %03d\n", v)
	}
	for _, a := range res.Applied {
		fmt.Fprintf(out, "applied %s %03d_%s (%s)\n", a.Line, a.Version, a.Name, a.Duration.Round(100_000))
	}
}
