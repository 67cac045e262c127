package console

import (
	"context"
	"net/http"
	"time"

	"github.com/pgsaga/pgsaga/internal/keyjson"
	"github.com/pgsaga/pgsaga/reconcile"
)

// unmatchedLimit is how many unmatched charges the page lists, newest first.
const unmatchedLimit = 500

// unmatchedChargeJSON is one charge of GET /charges/unmatched's JSON twin: the charge as
// `pgsaga reconcile --json` renders it, and when a reconciliation first and last found it.
type unmatchedChargeJSON struct {
	keyjson.Charge
	FoundAt   time.Time `json:"found_at"`
	CheckedAt time.Time `json:"checked_at"`
}

type unmatchedView struct {
	Charges []unmatchedRow
	More    bool
}

func (*unmatchedView) title() (string, string) { return "Unmatched charges", "unmatched" }

type unmatchedRow struct {
	unmatchedChargeJSON
	Created, Found string
}

// unmatchedCount counts the stored unmatched charges, for the overview.
func (c *Console) unmatchedCount(ctx context.Context) (int, error) {
	rec, err := reconcile.New(&reconcile.Config{Client: c.cfg.Client})
	if err != nil {
		return 0, err
	}
	return rec.Count(ctx)
}

// unmatchedCharges is GET /charges/unmatched: the provider's charges that the worker's
// reconciliation found no key accounting for (pgsaga_unmatched_charge), newest first.
func (c *Console) unmatchedCharges(w http.ResponseWriter, r *http.Request) {
	rec, err := reconcile.New(&reconcile.Config{Client: c.cfg.Client})
	if err != nil {
		c.internalError(w, r, "listing unmatched charges", err)
		return
	}
	list, err := rec.List(r.Context(), unmatchedLimit+1)
	if err != nil {
		c.internalError(w, r, "listing unmatched charges", err)
		return
	}
	v := &unmatchedView{More: len(list) > unmatchedLimit}
	out := struct {
		Unmatched []unmatchedChargeJSON `json:"unmatched"`
	}{Unmatched: []unmatchedChargeJSON{}}
	now := c.cfg.Now()
	for _, u := range list[:min(len(list), unmatchedLimit)] {
		j := unmatchedChargeJSON{Charge: keyjson.FromCharge(u.Charge), FoundAt: u.FoundAt, CheckedAt: u.CheckedAt}
		out.Unmatched = append(out.Unmatched, j)
		v.Charges = append(v.Charges, unmatchedRow{unmatchedChargeJSON: j, Created: since(now, u.Charge.CreatedAt), Found: since(now, u.FoundAt)})
	}
	if !wantsHTML(r) {
		writeJSON(w, http.StatusOK, out)
		return
	}
	c.render(w, r, http.StatusOK, "unmatched", v)
}
