package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/saga"
)

type keysFlags struct {
	keyFilter
	json bool
}

// keyFilter selects keys, newest first, for keys and resume --stuck.
type keyFilter struct {
	state     string
	operation string
	tenant    string
	// stuck: started with an expired lease, or failed (parked).
	stuck bool
	// limit is the most keys to list; 0 lists them all.
	limit int
}

func (c *cli) keysCmd() *cobra.Command {
	f := &keysFlags{}
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "List idempotency keys, newest first",
		Long: `Lists idempotency keys, newest first, as a table (relative times on the database clock) or,
with --json, as one document {"keys":[…]}. --stuck selects the keys that need attention:
started with an expired lease (their process died; the worker or resume finishes them) or
failed (parked after their attempts ran out; only resume moves them). Filters combine.
Read-only.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch saga.KeyStatus(f.state) {
			case "", saga.KeyStatusStarted, saga.KeyStatusCompleted, saga.KeyStatusParked:
			default:
				return usageErrorf("invalid --state %q: want started, completed or failed", f.state)
			}
			if f.limit < 0 {
				return usageErrorf("invalid --limit %d: want 0 (no limit) or more", f.limit)
			}
			return c.withPool(cmd.Context(), func(pool *pgxpool.Pool) error {
				keys, err := listKeys(cmd.Context(), pool, &f.keyFilter)
				if err != nil {
					return err
				}
				return keysListing.print(c, keys, f.json)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.state, "state", "", "only keys in this state: started, completed or failed")
	fl.BoolVar(&f.stuck, "stuck", false, "only stuck keys: started with an expired lease, or failed")
	fl.StringVar(&f.operation, "operation", "", "only keys of this operation")
	fl.StringVar(&f.tenant, "tenant", "", "only this tenant's keys")
	fl.IntVar(&f.limit, "limit", 100, "at most this many keys (0: no limit)")
	fl.BoolVar(&f.json, "json", false, `print {"keys":[…]} as JSON`)
	return cmd
}

// listKeys lists keys through the read API, newest first, following pages until f.limit keys
// (every key when f.limit is 0).
func listKeys(ctx context.Context, pool *pgxpool.Pool, f *keyFilter) ([]*saga.Key, error) {
	reader, err := newReader(pool)
	if err != nil {
		return nil, err
	}
	p := &saga.KeyListParams{State: saga.KeyStatus(f.state), Operation: f.operation, Stuck: f.stuck, Tenant: f.tenant, Limit: 1000}
	var keys []*saga.Key
	for {
		if f.limit > 0 {
			p.Limit = min(1000, f.limit-len(keys))
		}
		page, err := reader.KeyList(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("error listing keys: %w", err)
		}
		keys = append(keys, page.Keys...)
		if page.NextCursor == "" || (f.limit > 0 && len(keys) >= f.limit) {
			return keys, nil
		}
		p.Cursor = page.NextCursor
	}
}

// newReader is a saga client with no operations, for the read API.
func newReader(pool *pgxpool.Pool) (*saga.Client, error) {
	return saga.NewClient(&saga.Config{DB: pool})
}

// keysListing is how `keys` prints: relative times on the database clock.
var keysListing = &listing[*saga.Key, keyJSON]{
	name: "keys",
	json: renderKey,
	none: "no keys",
	header: []string{"TENANT", "ACTOR", "KEY", "OPERATION", "STATE", "RECOVERY POINT", "ATTEMPTS", "LEASE", "CREATED",
		"LAST ERROR"},
	row: func(k *saga.Key) []string {
		leaseText := "-"
		if k.Status == saga.KeyStatusStarted {
			leaseText = "lease " + lease(k.DBNow, k)
		}
		return []string{visible(k.Scope.Tenant), visible(k.Scope.Actor), visible(k.Key), visible(k.Operation), string(k.Status),
			visible(k.RecoveryPoint), strconv.Itoa(k.Attempts), leaseText, "created " + ago(k.DBNow, k.CreatedAt),
			truncate(orDash(k.LastError), 60)}
	},
}
