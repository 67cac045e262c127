package saga

import (
	"context"
	"fmt"

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/internal/sibling"
)

// callReferenceBatch is how many references one statement looks up.
const callReferenceBatch = 1000

// CallReferenceList reads which keys journaled calls under each of references: one
// sibling.CallReference per (reference, key), none for a reference no key journaled. It reads the
// journal a thousand references at a time, each batch two index scans (the key rows' entries,
// pgsaga_key_call_reference_idx, and pgsaga_call's, pgsaga_call_reference_idx). Reconciliation
// calls it with the references of the provider's charges.
//
// Completed keys are deleted with their journals after their retention (KeyDeleteExpired): a
// reference older than that is found under no key.
func (o *internalOps) CallReferenceList(ctx context.Context, references []string) ([]sibling.CallReference, error) {
	return callReferenceList(ctx, o.c.cfg.DB, references)
}

func callReferenceList(ctx context.Context, q pgxQuerier, references []string) ([]sibling.CallReference, error) {
	var out []sibling.CallReference
	for start := 0; start < len(references); start += callReferenceBatch {
		batch := references[start:min(start+callReferenceBatch, len(references))]
		rows, err := keystore.New(q).CallReferences(ctx, &keystore.CallReferencesParams{Refs: batch})
		if err != nil {
			return nil, fmt.Errorf("error reading call references: %w", err)
		}
		for _, r := range rows {
			out = append(out, sibling.CallReference{Reference: r.Reference, Tenant: r.TenantID, Actor: r.ActorID,
				Key: r.Key, Status: r.Status, ProviderIDs: r.ProviderIds})
		}
	}
	return out, nil
}
