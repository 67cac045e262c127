package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/saga"
)

// Config configures a Reconciler.
type Config struct {
	// Client reads the call journal (by reference) and its database holds
	// pgsaga_unmatched_charge. Required.
	Client *saga.Client
	// Lister lists the provider's charges. Required by Check and Run; List and Count work
	// without it. Defaults to nil.
	Lister gateway.Lister
	// BatchSize is how many charges are looked up in the journal at once. Defaults to 500.
	BatchSize int
	// Keep is how long Run keeps a stored unmatched charge after a run first found it.
	// Defaults to 7 days.
	Keep time.Duration
}

// withDefaults returns a copy of the config with every unset field given its default.
func (c *Config) withDefaults() *Config {
	out := *c
	if out.BatchSize == 0 {
		out.BatchSize = 500
	}
	if out.Keep == 0 {
		out.Keep = 7 * 24 * time.Hour
	}
	return &out
}

func (c *Config) validate() error {
	switch {
	case c.Client == nil:
		return errors.New("reconcile: Config.Client is required")
	case c.BatchSize < 1:
		return fmt.Errorf("reconcile: Config.BatchSize must be at least 1, got %d", c.BatchSize)
	case c.Keep < time.Hour:
		return fmt.Errorf("reconcile: Config.Keep must be at least 1h, got %s", c.Keep)
	}
	return nil
}

// errNoLister is returned by Check and Run on a Reconciler without a Lister.
var errNoLister = errors.New("reconcile: the gateway cannot list its charges (Config.Lister is nil)")

// Reconciler checks a provider's charges against the keys here.
type Reconciler struct {
	cfg *Config
}

// New checks the config and returns a Reconciler.
func New(cfg *Config) (*Reconciler, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Reconciler{cfg: cfg}, nil
}

// Result is what a check found.
type Result struct {
	// Checked counts the provider's charges looked at.
	Checked int
	// Unmatched are the charges no key accounts for (see the package doc), oldest first.
	Unmatched []gateway.Charge
}

// Check lists the provider's charges created at or after since and returns those that no key
// here accounts for. It writes nothing. An error listing the charges or reading the journal
// ends it: a partial answer could hide a charge.
func (r *Reconciler) Check(ctx context.Context, since time.Time) (*Result, error) {
	if r.cfg.Lister == nil {
		return nil, errNoLister
	}
	res := &Result{}
	batch := make([]gateway.Charge, 0, r.cfg.BatchSize)
	for charge, err := range r.cfg.Lister.ListCharges(ctx, since) {
		if err != nil {
			return nil, fmt.Errorf("error listing the provider's charges: %w", err)
		}
		res.Checked++
		if batch = append(batch, charge); len(batch) == cap(batch) {
			if err := r.collect(ctx, batch, res); err != nil {
				return nil, err
			}
			batch = batch[:0]
		}
	}
	if err := r.collect(ctx, batch, res); err != nil {
		return nil, err
	}
	return res, nil
}

// collect adds the charges of batch that no key accounts for to res.
func (r *Reconciler) collect(ctx context.Context, batch []gateway.Charge, res *Result) error {
	unmatched, err := r.unmatched(ctx, batch)
	res.Unmatched = append(res.Unmatched, unmatched...)
	return err
}

// unmatched returns the charges no key accounts for, in their order.
func (r *Reconciler) unmatched(ctx context.Context, charges []gateway.Charge) ([]gateway.Charge, error) {
	if len(charges) == 0 {
		return nil, nil
	}
	refs := make([]string, 0, len(charges))
	for _, c := range charges {
		refs = append(refs, c.Reference)
	}
	slices.Sort(refs)
	found, err := r.cfg.Client.Internal(sibling.Token{}).CallReferenceList(ctx, slices.Compact(refs))
	if err != nil {
		return nil, err
	}
	byRef := map[string][]sibling.CallReference{}
	for _, f := range found {
		byRef[f.Reference] = append(byRef[f.Reference], f)
	}
	var out []gateway.Charge
	for _, c := range charges {
		if !accountedFor(c, byRef[c.Reference]) {
			out = append(out, c)
		}
	}
	return out, nil
}

// accountedFor reports whether one of the keys that journaled c's reference accounts for c: a
// key still started or parked, or a completed key that recorded c's id, or no id, under it.
func accountedFor(c gateway.Charge, keys []sibling.CallReference) bool {
	for _, k := range keys {
		if saga.KeyStatus(k.Status) != saga.KeyStatusCompleted || len(k.ProviderIDs) == 0 || slices.Contains(k.ProviderIDs, c.ID) {
			return true
		}
	}
	return false
}
