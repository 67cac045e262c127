package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/internal/operator"
)

// operatorJSON is one entry of `operator list --json`, revoked_at null while the operator is
// not revoked.
type operatorJSON struct {
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

func (c *cli) operatorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Add, list and revoke the console's operators",
		Long: `The operators of the console: each signs in with their own token, and what they do is recorded
in the keys' history under their name. Only a digest of a token is stored: add prints it once.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(c.operatorAddCmd(), c.operatorListCmd(), c.operatorRevokeCmd())
	return cmd
}

func (c *cli) operatorAddCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a console operator and print their token, once",
		Long: `Adds the console operator NAME (1-64 characters: letters, digits and . _ @ -) and prints their
token, which is not stored and cannot be shown again. With --json: {"name","token"}. A name
that an operator has or had (revoked operators keep theirs) is a failure (exit 1).`,
		Args: exactArgs(1, "the NAME argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !operator.NameRule.MatchString(name) {
				return usageErrorf("invalid operator name %q: %w", name, operator.ErrInvalidName)
			}
			ctx := cmd.Context()
			pool, err := c.connectMigrated(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			op, token, err := operator.NewStore(pool).Add(ctx, name)
			if errors.Is(err, operator.ErrNameTaken) {
				return fmt.Errorf("operator %s exists: %w", name, err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.env.Stdout, map[string]string{"name": op.Name, "token": token})
			}
			tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "operator\t%s\n", op.Name)
			fmt.Fprintf(tw, "token\t%s\n", token)
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.env.Stdout, "The token is shown only now: give it to "+op.Name+" to sign in to the console with.")
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the operator and token as JSON")
	return cmd
}

func (c *cli) operatorListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the console's operators (never a token)",
		Long: `Lists the console's operators by name, revoked ones included, with when each was added and
revoked. Never a token. With --json: {"operators":[{"name","created_at","revoked_at"}]}.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pool, err := c.connectMigrated(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			ops, err := operator.NewStore(pool).List(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]operatorJSON, len(ops))
				for i, op := range ops {
					out[i] = operatorJSON{Name: op.Name, CreatedAt: op.CreatedAt.UTC(), RevokedAt: utcOrNil(op.RevokedAt)}
				}
				return writeJSON(c.env.Stdout, map[string][]operatorJSON{"operators": out})
			}
			if len(ops) == 0 {
				_, err := fmt.Fprintln(c.env.Stdout, "no operators")
				return err
			}
			now := time.Now()
			tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tADDED\tREVOKED")
			for _, op := range ops {
				revoked := "-"
				if op.RevokedAt != nil {
					revoked = ago(now, *op.RevokedAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", visible(op.Name), ago(now, op.CreatedAt), revoked)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the operators as JSON")
	return cmd
}

func (c *cli) operatorRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a console operator at once (their sessions end)",
		Long: `Revokes the console operator NAME: their token lets nobody in from now on, and their sessions
end at their next request (the console checks the operator on every request). Their name stays
taken. An unknown NAME is a failure (exit 1).`,
		Args: exactArgs(1, "the NAME argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pool, err := c.connectMigrated(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			op, err := operator.NewStore(pool).Revoke(ctx, args[0])
			if errors.Is(err, operator.ErrNotFound) {
				return fmt.Errorf("no operator is named %q", args[0])
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.env.Stdout, "revoked operator %s\n", op.Name)
			return err
		},
	}
}
