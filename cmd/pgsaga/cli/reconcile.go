package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/internal/keyjson"
	"github.com/pgsaga/pgsaga/reconcile"
)

func (c *cli) reconcileCmd() *cobra.Command {
	var (
		since string
		json  bool
	)
	cmd := &cobra.Command{
		Use:   "reconcile --since DURATION|RFC3339",
		Short: "Report the provider's charges that no key here accounts for",
		Long: `Asks the payment provider for every charge created since --since (a duration back from
now, such as 2h, or an RFC 3339 time) and reports each one that no key here accounts for: what
a database failover that lost acknowledged commits leaves behind when the client never retried.
A charge is accounted for by a key that journaled a call under its reference and is still
started or parked (those show in "keys --stuck"), or that completed and recorded this charge
(or no charge id at all) under it; a completed key that recorded another charge under the same
reference does not account for this one.

Prints one line per unmatched charge ("PROVIDER_ID REFERENCE AMOUNT CURRENCY STATUS
CREATED_AT"), or with --json {"checked":N,"unmatched":[{"provider_id","reference","amount",
"currency","status","created_at"}]}. Exits 0 when nothing is unmatched, 1 when something is.
It writes nothing.

Completed keys are deleted with their journals after their retention (24h by default): a
--since older than that reports charges whose records were deleted, not lost.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			return c.runReconcile(cmd, from, json)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "look at charges created since then: a duration back from now (2h) or an RFC 3339 time (required)")
	cmd.Flags().BoolVar(&json, "json", false, `print {"checked":N,"unmatched":[…]} as JSON`)
	c.appFlags(cmd)
	return cmd
}

// parseSince reads --since: a positive duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, usageErrorf("--since is required: a duration back from now (2h) or an RFC 3339 time")
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usageErrorf("--since must be a positive duration, got %s", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageErrorf("invalid --since %q: want a duration (2h) or an RFC 3339 time (2006-01-02T15:04:05Z)", s)
	}
	return t, nil
}

func (c *cli) runReconcile(cmd *cobra.Command, since time.Time, asJSON bool) error {
	ctx := cmd.Context()
	logger, err := c.logger(logOneShot)
	if err != nil {
		return err
	}
	pool, err := c.connectMigrated(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	svc, err := c.build(ctx, cmd, &BuildParams{Pool: pool, Logger: logger, Registerer: prometheus.NewRegistry()})
	if err != nil {
		return err
	}
	if svc.Lister == nil {
		return errors.New("the application's gateway cannot list its charges (Service.Lister is nil)")
	}
	rec, err := reconcile.New(&reconcile.Config{Client: svc.Client, Lister: svc.Lister})
	if err != nil {
		return err
	}
	res, err := rec.Check(ctx, since)
	if err != nil {
		return err
	}
	if asJSON {
		out := struct {
			Checked   int              `json:"checked"`
			Unmatched []keyjson.Charge `json:"unmatched"`
		}{Checked: res.Checked, Unmatched: []keyjson.Charge{}}
		for _, u := range res.Unmatched {
			out.Unmatched = append(out.Unmatched, keyjson.FromCharge(u))
		}
		if err := writeJSON(c.env.Stdout, out); err != nil {
			return err
		}
	} else {
		for _, u := range res.Unmatched {
			fmt.Fprintln(c.env.Stdout, unmatchedLine(u))
		}
	}
	if n := len(res.Unmatched); n > 0 {
		return fmt.Errorf("%d of %d %s since %s %s unmatched", n, res.Checked, plural(res.Checked, "charge", "charges"),
			since.Format(time.RFC3339), plural(n, "is", "are"))
	}
	fmt.Fprintf(c.env.Stderr, "%d %s since %s, none unmatched\n", res.Checked, plural(res.Checked, "charge", "charges"), since.Format(time.RFC3339))
	return nil
}

// unmatchedLine is one charge as `reconcile` prints it; a reference holding white space is
// quoted, so that the line keeps its six fields.
func unmatchedLine(u gateway.Charge) string {
	ref := u.Reference
	if ref == "" || strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == '"' }) {
		ref = fmt.Sprintf("%q", ref)
	}
	return fmt.Sprintf("%s %s %d %s %s %s", u.ID, ref, u.Amount, u.Currency, u.Status, u.CreatedAt.UTC().Format(time.RFC3339))
}
