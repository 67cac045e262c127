package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// reconcile runs `pgsaga reconcile` against the simulator over the whole run: no failover here
// loses commits, so every charge must be accounted for by a key, and each one that is not is a
// violation (money that moved with no record).
func (r *runner) reconcile(ctx context.Context, since time.Time) (checked int, vs []violation, err error) {
	out, cliErr := r.env.cli(ctx, "reconcile", "--gateway-url", r.env.simURL, "--since", since.UTC().Format(time.RFC3339Nano), "--json")
	var doc struct {
		Checked   int `json:"checked"`
		Unmatched []struct {
			ProviderID string `json:"provider_id"`
			Reference  string `json:"reference"`
			Amount     int64  `json:"amount"`
			Status     string `json:"status"`
		} `json:"unmatched"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return 0, nil, fmt.Errorf("error reconciling: %w (%v)", err, cliErr)
	}
	r.tl.add("reconcile: %d charges checked, %d unmatched", doc.Checked, len(doc.Unmatched))
	for _, u := range doc.Unmatched {
		vs = append(vs, violation{kind: "unmatched charge", text: fmt.Sprintf("charge %s (%s, %d, %s) is accounted for by no key",
			u.ProviderID, u.Reference, u.Amount, u.Status)})
	}
	return doc.Checked, vs, nil
}
