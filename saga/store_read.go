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

// The completed keys GC may delete: past their own expiry (expiredSQL), or, with an override,
// completed more than $1 ms ago (olderThanSQL: 0, every completed key). Both are sargable on the
// key table's BRIN index (created_at, expires_at): a key completed before a moment was created
// before it too. now() rather than clock_timestamp(), which an index cannot be searched by.
const (
	expiredCondition   = `status = 'completed' AND expires_at <= now()`
	olderThanCondition = `status = 'completed' AND completed_at <= now() - $1::bigint * interval '1 millisecond'
		AND created_at <= now() - $1::bigint * interval '1 millisecond'`
)

// The deletions of one batch of the keys a condition selects, with their call journal and
// history. SKIP LOCKED leaves rows a request is reading under lock (a replay, a takeover
// attempt) for a later batch instead of waiting for them.
const (
	deleteGoneSQL = `
	RETURNING tenant_id, actor_id, key),
calls AS (
	DELETE FROM pgsaga_call c USING gone g
	WHERE c.tenant_id = g.tenant_id AND c.actor_id = g.actor_id AND c.key = g.key),
actions AS (
	DELETE FROM pgsaga_key_action a USING gone g
	WHERE a.tenant_id = g.tenant_id AND a.actor_id = g.actor_id AND a.key = g.key)
SELECT count(*) FROM gone`
	deleteExpiredByExpirySQL = `WITH gone AS (
	DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM pgsaga_key WHERE ` + expiredCondition + ` LIMIT $1 FOR UPDATE SKIP LOCKED))` + deleteGoneSQL
	deleteExpiredByAgeSQL = `WITH gone AS (
	DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM pgsaga_key WHERE ` + olderThanCondition + ` LIMIT $2 FOR UPDATE SKIP LOCKED))` + deleteGoneSQL
	countExpiredByExpirySQL = `SELECT count(*) FROM pgsaga_key WHERE ` + expiredCondition
	countExpiredByAgeSQL    = `SELECT count(*) FROM pgsaga_key WHERE ` + olderThanCondition
)

func deleteExpired(ctx context.Context, q pgxQuerier, olderThan *time.Duration, batch int) (int, error) {
	var row pgx.Row
	if olderThan != nil {
		row = q.QueryRow(ctx, deleteExpiredByAgeSQL, olderThan.Milliseconds(), batch)
	} else {
		row = q.QueryRow(ctx, deleteExpiredByExpirySQL, batch)
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return 0, fmt.Errorf("error deleting expired keys: %w", err)
	}
	return n, nil
}

func countExpired(ctx context.Context, q pgxQuerier, olderThan *time.Duration) (int, error) {
	var row pgx.Row
	if olderThan != nil {
		row = q.QueryRow(ctx, countExpiredByAgeSQL, olderThan.Milliseconds())
	} else {
		row = q.QueryRow(ctx, countExpiredByExpirySQL)
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting expired keys: %w", err)
	}
	return n, nil
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
