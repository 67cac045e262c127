package saga

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/keystore"
)

// CallReference is one key that journaled calls under a downstream reference: the key, where
// it stands, and the provider ids its attempts under that reference recorded.
type CallReference struct {
	// Reference is the downstream reference the provider saw.
	Reference string
	// Scope and Key name the key.
	Scope Scope
	Key   string
	// Status is where the key stands.
	Status KeyStatus
	// ProviderIDs are the provider's ids (charge ids) the key's attempts under the reference
	// recorded, sorted; empty when none recorded one (an attempt whose outcome is unknown, a
	// call step that records no id).
	ProviderIDs []string
}

// callReferenceBatch is how many references one statement looks up.
const callReferenceBatch = 1000

// CallReferenceList reads which keys journaled calls under each of references: one
// CallReference per (reference, key), none for a reference no key journaled. It reads the
// journal a thousand references at a time, each batch two index scans (the key rows' entries,
// pgsaga_key_call_reference_idx, and pgsaga_call's, pgsaga_call_reference_idx). Reconciliation
// calls it with the references of the provider's charges.
//
// Completed keys are deleted with their journals after their retention (KeyDeleteExpired): a
// reference older than that is found under no key.
func (c *Client) CallReferenceList(ctx context.Context, references []string) ([]CallReference, error) {
	return callReferenceList(ctx, c.cfg.DB, references)
}

// CallReferenceListTx is CallReferenceList in the caller's transaction.
func (c *Client) CallReferenceListTx(ctx context.Context, tx pgx.Tx, references []string) ([]CallReference, error) {
	return callReferenceList(ctx, tx, references)
}

func callReferenceList(ctx context.Context, q pgxQuerier, references []string) ([]CallReference, error) {
	var out []CallReference
	for start := 0; start < len(references); start += callReferenceBatch {
		batch := references[start:min(start+callReferenceBatch, len(references))]
		rows, err := keystore.New(q).CallReferences(ctx, &keystore.CallReferencesParams{Refs: batch})
		if err != nil {
			return nil, fmt.Errorf("error reading call references: %w", err)
		}
		for _, r := range rows {
			out = append(out, CallReference{Reference: r.Reference, Scope: Scope{Tenant: r.TenantID, Actor: r.ActorID},
				Key: r.Key, Status: KeyStatus(r.Status), ProviderIDs: r.ProviderIds})
		}
	}
	return out, nil
}
