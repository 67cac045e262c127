package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/phases"
)

// The operators' reads (keystore's list.sql and count.sql) and the retention GC's deletions on
// pgsaga_key, pgsaga_call and pgsaga_key_action.

// listWindows are how far back from the newest key wanted a listing looks, widening until a
// window holds a page: an hour, a day, a month, three years, then everything.
var listWindows = []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 3 * 365 * 24 * time.Hour, 0}

// listKeys returns up to limit keys, newest first, after the cursor. A window that holds limit
// keys holds the newest limit keys of the whole listing (every key outside it is older), so
// the answer is that of a listing with no window.
func listKeys(ctx context.Context, q keystore.DBTX, p *KeyListParams, after *keyCursor, limit int) ([]*Key, error) {
	var c keyCursor
	upper := time.Now()
	if after != nil {
		c, upper = *after, after.CreatedAt
	}
	for _, w := range listWindows {
		since := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
		if w > 0 {
			since = pgtype.Timestamptz{Time: upper.Add(-w), Valid: true}
		}
		rows, err := keystore.New(q).ListKeys(ctx, &keystore.ListKeysParams{
			Status: string(p.State), Operation: p.Operation, TenantID: p.Tenant, Stuck: p.Stuck, KeyPrefix: p.KeyPrefix,
			After: after != nil, AfterCreatedAt: pgtype.Timestamptz{Time: c.CreatedAt, Valid: true},
			AfterTenantID: c.Tenant, AfterActorID: c.Actor, AfterKey: c.Key, Since: since, MaxKeys: int32(limit)})
		if err != nil {
			return nil, fmt.Errorf("error listing keys: %w", err)
		}
		keys := make([]*Key, len(rows))
		for i := range rows {
			if keys[i], err = keyOf(&rows[i].PgsagaKey, rows[i].Leased, rows[i].DbNow); err != nil {
				return nil, fmt.Errorf("error listing keys: %w", err)
			}
		}
		if len(keys) == limit || w == 0 {
			return keys, nil
		}
	}
	panic("unreachable: the last window is unbounded")
}

// pgxQuerier is a pool or a transaction.
type pgxQuerier interface {
	queryer
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// getKeyDetail reads a key's call journal and history, oldest first, into k.
func getKeyDetail(ctx context.Context, q keystore.DBTX, k *Key) error {
	detail, err := keystore.New(q).KeyDetail(ctx, &keystore.KeyDetailParams{TenantID: k.Scope.Tenant, ActorID: k.Scope.Actor, Key: k.Key})
	if err != nil {
		return fmt.Errorf("error reading the key's calls and history: %w", err)
	}
	journal, err := decodeCalls(detail.Calls, nil)
	if err != nil {
		return err
	}
	k.Calls = make([]phases.CallRecord, 0, len(journal))
	for _, r := range journal {
		k.Calls = append(k.Calls, phases.CallRecord{Step: r.Step, Attempt: r.Attempt, Reference: r.Reference,
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Deadline: r.Deadline, MaxInFlight: r.MaxInFlight,
			Outcome: phases.CallOutcome(r.Outcome), ProviderID: r.ProviderID})
	}
	var actions []struct {
		At        time.Time `json:"at"`
		By        string    `json:"by"`
		Action    string    `json:"action"`
		Outcome   *string   `json:"outcome"`
		Note      *string   `json:"note"`
		Reference *string   `json:"reference"`
	}
	if err := json.Unmarshal(detail.History, &actions); err != nil {
		return fmt.Errorf("error decoding the key's history: %w", err)
	}
	k.History = make([]KeyAction, 0, len(actions))
	for _, a := range actions {
		k.History = append(k.History, KeyAction{At: a.At, By: a.By, Action: KeyActionKind(a.Action),
			Outcome: phases.SettleOutcome(deref(a.Outcome)), Note: deref(a.Note), Reference: deref(a.Reference)})
	}
	return nil
}

// oldestStuck is the stuck key that has waited longest since its last change, nil when none.
func oldestStuck(ctx context.Context, q keystore.DBTX) (*Key, error) {
	r, err := keystore.New(q).OldestStuck(ctx)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the oldest stuck key: %w", err)
	}
	return keyOf(&r.PgsagaKey, r.Leased, r.DbNow)
}
