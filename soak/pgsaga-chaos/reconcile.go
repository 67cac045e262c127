package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// reconcile runs `pgsaga reconcile --json` against the simulator over the run (from since) and
// returns its report: every charge the provider made that no completed key accounts for. It
// exits 1 when it reports something, which is no error here: the judge decides what the report
// must hold.
func (r *runner) reconcile(ctx context.Context, since time.Time) (*reconcileReport, error) {
	out, cliErr := r.env.cli(ctx, "reconcile", "--gateway-url", r.env.simURL, "--since", since.UTC().Format(time.RFC3339Nano), "--json")
	var rep reconcileReport
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("error reconciling: %w (%v)", err, cliErr)
	}
	r.tl.add("reconcile: %d charges checked, %d unmatched", rep.Checked, len(rep.Unmatched))
	return &rep, nil
}
