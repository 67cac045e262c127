package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				op, token, err := operator.NewStore(pool).Add(cmd.Context(), name)
				if errors.Is(err, operator.ErrNameTaken) {
					return fmt.Errorf("operator %s exists: %w", name, err)
				}
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(c.env.Stdout, map[string]string{"name": op.Name, "token": token})
				}
				return c.printShownOnce("The token is shown only now: give it to "+op.Name+" to sign in to the console with.",
					[2]string{"operator", op.Name}, [2]string{"token", token})
			})
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
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				ops, err := operator.NewStore(pool).List(cmd.Context())
				if err != nil {
					return err
				}
				now := time.Now()
				l := &listing[*operator.Operator, operatorJSON]{
					name: "operators",
					json: func(op *operator.Operator) operatorJSON {
						return operatorJSON{Name: op.Name, CreatedAt: op.CreatedAt.UTC(), RevokedAt: utcOrNil(op.RevokedAt)}
					},
					none:   "no operators",
					header: []string{"NAME", "ADDED", "REVOKED"},
					row: func(op *operator.Operator) []string {
						return []string{visible(op.Name), ago(now, op.CreatedAt), revokedAgo(now, op.RevokedAt)}
					},
				}
				return l.print(c, ops, asJSON)
			})
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
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				op, err := operator.NewStore(pool).Revoke(cmd.Context(), args[0])
				if errors.Is(err, operator.ErrNotFound) {
					return fmt.Errorf("no operator is named %q", args[0])
				}
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.env.Stdout, "revoked operator %s\n", op.Name)
				return err
			})
		},
	}
}
