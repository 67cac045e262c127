package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/internal/apikey"
	"github.com/pgsaga/pgsaga/saga"
)

// apiKeyCreatedJSON is a new API key as `apikey create --json` renders it, with its secret.
type apiKeyCreatedJSON struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Actor     string    `json:"actor"`
	Secret    string    `json:"secret"`
	CreatedAt time.Time `json:"created_at"`
}

// apiKeyListJSON is one entry of `apikey list --json`, revoked_at null while the key is valid.
type apiKeyListJSON struct {
	ID        string     `json:"id"`
	Tenant    string     `json:"tenant"`
	Actor     string     `json:"actor"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

func (c *cli) apiKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apikey",
		Short: "Create, list and revoke the API keys serve authenticates requests with",
		Long: `The API keys of serve: each names the tenant and actor of every request that presents it as
"Authorization: Bearer <secret>". Only a digest of a secret is stored: create prints it once.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(c.apiKeyCreateCmd(), c.apiKeyListCmd(), c.apiKeyRevokeCmd())
	return cmd
}

func (c *cli) apiKeyCreateCmd() *cobra.Command {
	var (
		tenant, actor string
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "create --tenant T --actor A",
		Short: "Create an API key and print its secret, once",
		Long: `Creates an API key for (tenant, actor) and prints its secret, which is not stored and cannot
be shown again: a client sends it as "Authorization: Bearer <secret>". With --json:
{"id","tenant","actor","secret","created_at"}. Tenant and actor are 1-64 characters each.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required("tenant", tenant, "actor", actor); err != nil {
				return err
			}
			ctx := cmd.Context()
			pool, err := c.connectMigrated(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			k, err := apikey.NewStore(pool).Create(ctx, saga.Scope{Tenant: tenant, Actor: actor})
			if errors.Is(err, apikey.ErrInvalidScope) {
				return usageErrorf("%w", err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(c.env.Stdout, apiKeyCreatedJSON{ID: k.ID, Tenant: k.Scope.Tenant, Actor: k.Scope.Actor,
					Secret: k.Secret, CreatedAt: k.CreatedAt.UTC()})
			}
			tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "id\t%s\n", k.ID)
			fmt.Fprintf(tw, "tenant\t%s\n", visible(k.Scope.Tenant))
			fmt.Fprintf(tw, "actor\t%s\n", visible(k.Scope.Actor))
			fmt.Fprintf(tw, "secret\t%s\n", k.Secret)
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(c.env.Stdout, "The secret is shown only now: store it where the client reads it.")
			return err
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant of the key's requests (required)")
	cmd.Flags().StringVar(&actor, "actor", "", "the actor of the key's requests (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the key as JSON")
	return cmd
}

func (c *cli) apiKeyListCmd() *cobra.Command {
	var (
		tenant string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the API keys, newest first (never a secret)",
		Long: `Lists the API keys, revoked ones included, newest first: id, tenant, actor, when each was
created and revoked. Never a secret. With --json: {"api_keys":[{"id","tenant","actor",
"created_at","revoked_at"}]}.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pool, err := c.connectMigrated(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			keys, err := apikey.NewStore(pool).List(ctx, &apikey.ListParams{Tenant: tenant})
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]apiKeyListJSON, len(keys))
				for i, k := range keys {
					out[i] = apiKeyListJSON{ID: k.ID, Tenant: k.Scope.Tenant, Actor: k.Scope.Actor,
						CreatedAt: k.CreatedAt.UTC(), RevokedAt: utcOrNil(k.RevokedAt)}
				}
				return writeJSON(c.env.Stdout, map[string][]apiKeyListJSON{"api_keys": out})
			}
			if len(keys) == 0 {
				_, err := fmt.Fprintln(c.env.Stdout, "no API keys")
				return err
			}
			now := time.Now()
			tw := tabwriter.NewWriter(c.env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tACTOR\tCREATED\tREVOKED")
			for _, k := range keys {
				revoked := "-"
				if k.RevokedAt != nil {
					revoked = ago(now, *k.RevokedAt)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, visible(k.Scope.Tenant), visible(k.Scope.Actor), ago(now, k.CreatedAt), revoked)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's keys")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the keys as JSON")
	return cmd
}

func (c *cli) apiKeyRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key at once",
		Long: `Revokes the API key ID: from now on every request that presents it gets 401, in every serve
process (each request reads its key). Revoking a revoked key changes nothing. An unknown ID is
a failure (exit 1).`,
		Args: exactArgs(1, "the ID argument"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			pool, err := c.connectMigrated(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			k, err := apikey.NewStore(pool).Revoke(ctx, args[0])
			if errors.Is(err, apikey.ErrNotFound) {
				return fmt.Errorf("no API key has the id %q", args[0])
			}
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.env.Stdout, "revoked API key %s (tenant %s, actor %s)\n", k.ID, visible(k.Scope.Tenant), visible(k.Scope.Actor))
			return err
		},
	}
}

func utcOrNil(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
