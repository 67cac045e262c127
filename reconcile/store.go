package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/gateway"
)

// The statements on pgsaga_unmatched_charge; this package is its only writer.

// recordUnmatchedSQL inserts the charges found unmatched, or notes that a run found them again.
const recordUnmatchedSQL = `INSERT INTO pgsaga_unmatched_charge (provider_id, reference, amount, currency, status, created_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[])
ON CONFLICT (provider_id) DO UPDATE SET status = excluded.status, checked_at = now()`

// forgetCheckedSQL deletes the stored charges of the window a run checked ($1: its start) that it
// did not find unmatched again ($2: those it did), and those given as accounted for ($3).
const forgetCheckedSQL = `DELETE FROM pgsaga_unmatched_charge
WHERE (created_at >= $1 AND provider_id <> ALL($2::text[])) OR provider_id = ANY($3::text[])`

// forgetOldSQL deletes the charges first found before $1.
const forgetOldSQL = `DELETE FROM pgsaga_unmatched_charge WHERE found_at < $1`

// storedBeforeSQL reads the stored charges created before $1, the ones a run's window does not
// cover, so that they are checked again.
const storedBeforeSQL = `SELECT provider_id, reference, amount, currency, status, created_at
FROM pgsaga_unmatched_charge WHERE created_at < $1 ORDER BY created_at, provider_id`

// listUnmatchedSQL lists the stored charges, newest first.
const listUnmatchedSQL = `SELECT provider_id, reference, amount, currency, status, created_at, found_at, checked_at
FROM pgsaga_unmatched_charge ORDER BY created_at DESC, provider_id DESC LIMIT $1`

// countUnmatchedSQL counts the stored charges.
const countUnmatchedSQL = `SELECT count(*) FROM pgsaga_unmatched_charge`

// UnmatchedCharge is a charge a run found unmatched, as stored.
type UnmatchedCharge struct {
	// Charge is the provider's charge as it stood when a run last found it.
	Charge gateway.Charge
	// FoundAt is when a run first found it unmatched; CheckedAt when one last did.
	FoundAt, CheckedAt time.Time
}

// Run checks the provider's charges created at or after since (Check), checks again the stored
// unmatched charges older than that, and records the outcome in one transaction: charges found
// unmatched are stored, stored ones now accounted for are deleted, and so are those first found
// longer than Config.Keep ago. It returns what Check found and how many charges are stored now.
func (r *Reconciler) Run(ctx context.Context, since time.Time) (res *Result, stored int, err error) {
	if res, err = r.Check(ctx, since); err != nil {
		return nil, 0, err
	}
	db := r.cfg.Client.Config().DB
	rows, err := db.Query(ctx, storedBeforeSQL, since)
	if err != nil {
		return nil, 0, fmt.Errorf("error reading unmatched charges: %w", err)
	}
	older, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (gateway.Charge, error) {
		var c gateway.Charge
		err := row.Scan(&c.ID, &c.Reference, &c.Amount, &c.Currency, &c.Status, &c.CreatedAt)
		return c, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("error reading unmatched charges: %w", err)
	}
	var accounted []string
	for start := 0; start < len(older); start += r.cfg.BatchSize {
		batch := older[start:min(start+r.cfg.BatchSize, len(older))]
		still, err := r.unmatched(ctx, batch)
		if err != nil {
			return nil, 0, err
		}
		accounted = append(accounted, missing(batch, still)...)
	}

	var c columns
	for _, u := range res.Unmatched {
		c.add(u)
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, recordUnmatchedSQL, c.ids, c.refs, c.amounts, c.currencies, c.statuses, c.created); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, forgetCheckedSQL, since, c.ids, accounted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, forgetOldSQL, time.Now().Add(-r.cfg.Keep)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, countUnmatchedSQL).Scan(&stored)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("error recording unmatched charges: %w", err)
	}
	return res, stored, nil
}

// missing returns the ids of the charges of all that are not in some.
func missing(all, some []gateway.Charge) []string {
	kept := map[string]bool{}
	for _, c := range some {
		kept[c.ID] = true
	}
	var out []string
	for _, c := range all {
		if !kept[c.ID] {
			out = append(out, c.ID)
		}
	}
	return out
}

// columns are charges as the arrays recordUnmatchedSQL unnests.
type columns struct {
	ids, refs, currencies, statuses []string
	amounts                         []int64
	created                         []time.Time
}

func (c *columns) add(ch gateway.Charge) {
	c.ids = append(c.ids, ch.ID)
	c.refs = append(c.refs, ch.Reference)
	c.amounts = append(c.amounts, ch.Amount)
	c.currencies = append(c.currencies, ch.Currency)
	c.statuses = append(c.statuses, string(ch.Status))
	c.created = append(c.created, ch.CreatedAt)
}

// List returns up to limit stored unmatched charges (0: 100), newest first.
func (r *Reconciler) List(ctx context.Context, limit int) ([]UnmatchedCharge, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := r.cfg.Client.Config().DB.Query(ctx, listUnmatchedSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("error listing unmatched charges: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (UnmatchedCharge, error) {
		var u UnmatchedCharge
		c := &u.Charge
		err := row.Scan(&c.ID, &c.Reference, &c.Amount, &c.Currency, &c.Status, &c.CreatedAt, &u.FoundAt, &u.CheckedAt)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("error listing unmatched charges: %w", err)
	}
	return out, nil
}

// Count counts the stored unmatched charges.
func (r *Reconciler) Count(ctx context.Context) (int, error) {
	var n int
	if err := r.cfg.Client.Config().DB.QueryRow(ctx, countUnmatchedSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting unmatched charges: %w", err)
	}
	return n, nil
}
