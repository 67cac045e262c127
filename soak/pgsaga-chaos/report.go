package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeViolations writes every violation, and for each key concerned what the run knows of it,
// to violations.txt in the run's directory.
func (r *runner) writeViolations(ctx context.Context, ev *evidence, v *verdict) error {
	var b strings.Builder
	keys := map[scope]bool{}
	for _, vi := range v.violations {
		fmt.Fprintf(&b, "%s: %s\n", vi.kind, vi.text)
		if vi.key != (scope{}) {
			keys[vi.key] = true
		}
	}
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b scope) int { return strings.Compare(a.String(), b.String()) })
	for i, k := range sorted {
		if i == 50 {
			fmt.Fprintf(&b, "\n… and %d more keys\n", len(sorted)-50)
			break
		}
		b.WriteString("\n" + r.keyReport(ctx, ev, k))
	}
	return os.WriteFile(filepath.Join(r.dir, "violations.txt"), []byte(b.String()), 0o644)
}

// keyReport is what the run knows about a violation's key: the key with its calls (show
// --json), the ledger's charges for its references, the clients' requests and the timeline
// around them.
func (r *runner) keyReport(ctx context.Context, ev *evidence, sc scope) string {
	var b strings.Builder
	it := r.traffic.intents.get(sc)
	if it == nil {
		return fmt.Sprintf("key %s: not an intent of this run\n", sc)
	}
	fmt.Fprintf(&b, "key %s (%s) body %s\n", sc, it.kind, it.req.Body)
	k, raw, err := r.env.showKey(ctx, sc)
	if err != nil {
		fmt.Fprintf(&b, "  show: %v\n", err)
	} else {
		fmt.Fprintf(&b, "  show --json: %s\n", bytes.TrimSpace(raw))
		byRef := map[string]bool{}
		for _, c := range k.Calls {
			if ref := orEmpty(c.Reference); ref != "" && !byRef[ref] {
				byRef[ref] = true
				var charges []string
				for _, ch := range ev.Charges {
					if ch.Reference == ref {
						charges = append(charges, fmt.Sprintf("%s %s %d %s", ch.ID, ch.Status, ch.Amount, ch.Currency))
					}
				}
				fmt.Fprintf(&b, "  ledger for %s: %s\n", ref, orNoCharge(charges))
			}
		}
	}
	reqs := r.traffic.tr.requestsOf(sc)
	var from, to time.Time
	for i, q := range reqs {
		fmt.Fprintf(&b, "  request %d at %s: %s\n", i+1, r.tl.offset(q.at), q)
		if from.IsZero() || q.at.Before(from) {
			from = q.at
		}
		if end := q.at.Add(q.took); end.After(to) {
			to = end
		}
	}
	_, answers, _ := it.snapshot()
	for _, a := range answers {
		fmt.Fprintf(&b, "  answer at %s (drain %v): %d %s\n", r.tl.offset(a.at), a.drain, a.status, a.body)
	}
	if !from.IsZero() {
		b.WriteString("  timeline around its requests:\n")
		for _, line := range r.tl.between(from.Add(-3*time.Second), to.Add(3*time.Second)) {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
}

func orNoCharge(charges []string) string {
	if len(charges) == 0 {
		return "no charge"
	}
	return strings.Join(charges, ", ")
}
