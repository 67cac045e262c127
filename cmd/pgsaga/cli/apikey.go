package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				k, err := apikey.NewStore(pool).Create(cmd.Context(), saga.Scope{Tenant: tenant, Actor: actor})
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
				return c.printShownOnce("The secret is shown only now: store it where the client reads it.",
					[2]string{"id", k.ID}, [2]string{"tenant", visible(k.Scope.Tenant)}, [2]string{"actor", visible(k.Scope.Actor)},
					[2]string{"secret", k.Secret})
			})
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
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				keys, err := apikey.NewStore(pool).List(cmd.Context(), &apikey.ListParams{Tenant: tenant})
				if err != nil {
					return err
				}
				now := time.Now()
				l := &listing[*apikey.Key, apiKeyListJSON]{
					name: "api_keys",
					json: func(k *apikey.Key) apiKeyListJSON {
						return apiKeyListJSON{ID: k.ID, Tenant: k.Scope.Tenant, Actor: k.Scope.Actor,
							CreatedAt: k.CreatedAt.UTC(), RevokedAt: utcOrNil(k.RevokedAt)}
					},
					none:   "no API keys",
					header: []string{"ID", "TENANT", "ACTOR", "CREATED", "REVOKED"},
					row: func(k *apikey.Key) []string {
						return []string{k.ID, visible(k.Scope.Tenant), visible(k.Scope.Actor), ago(now, k.CreatedAt), revokedAgo(now, k.RevokedAt)}
					},
				}
				return l.print(c, keys, asJSON)
			})
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
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				k, err := apikey.NewStore(pool).Revoke(cmd.Context(), args[0])
				if errors.Is(err, apikey.ErrNotFound) {
					return fmt.Errorf("no API key has the id %q", args[0])
				}
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.env.Stdout, "revoked API key %s (tenant %s, actor %s)\n", k.ID, visible(k.Scope.Tenant), visible(k.Scope.Actor))
				return err
			})
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
