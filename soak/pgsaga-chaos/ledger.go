package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// ledgerWatch reads the simulator's ledger (GET /_sim/ledger): every charge it ever made, as
// it stands, and the count by reference. While the run goes on it polls the ledger often enough
// (a fraction of --pending-for) to see every charge that was created pending, and notes when
// each reference was first charged more than once.
type ledgerWatch struct {
	url string
	hc  *http.Client
	tl  *timeline

	mu sync.Mutex
	// pending holds the ids of charges seen pending.
	pending map[string]bool
	// doubles holds the references seen charged more than once, with when that was first seen.
	doubles map[string]time.Time
}

func newLedgerWatch(simURL string, tl *timeline) *ledgerWatch {
	return &ledgerWatch{url: simURL + "/_sim/ledger", hc: &http.Client{Timeout: 10 * time.Second}, tl: tl,
		pending: map[string]bool{}, doubles: map[string]time.Time{}}
}

// read fetches the ledger.
func (w *ledgerWatch) read(ctx context.Context) (*sim.Ledger, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("error reading the simulator's ledger: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("error reading the simulator's ledger: status %d", resp.StatusCode)
	}
	var l sim.Ledger
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return nil, fmt.Errorf("error decoding the simulator's ledger: %w", err)
	}
	w.note(&l)
	return &l, nil
}

// note records the pending charges and the double charges in l.
func (w *ledgerWatch) note(l *sim.Ledger) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range l.Charges {
		if c.Status == gateway.StatusPending {
			w.pending[c.ID] = true
		}
	}
	for ref, n := range l.ByReference {
		if _, seen := w.doubles[ref]; n > 1 && !seen {
			w.doubles[ref] = time.Now()
			w.tl.add("ledger: reference %s charged %d times", ref, n)
		}
	}
}

// poll reads the ledger every interval until ctx ends.
func (w *ledgerWatch) poll(ctx context.Context, interval time.Duration) {
	for sleepCtx(ctx, interval) {
		if _, err := w.read(ctx); err != nil && ctx.Err() == nil {
			w.tl.add("%v", err)
		}
	}
}

// pendingSeen counts the charges seen pending.
func (w *ledgerWatch) pendingSeen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// byReference indexes a ledger's charges by reference, in creation order.
func byReference(l *sim.Ledger) map[string][]gateway.Charge {
	out := map[string][]gateway.Charge{}
	for _, c := range l.Charges {
		out[c.Reference] = append(out[c.Reference], c)
	}
	return out
}
