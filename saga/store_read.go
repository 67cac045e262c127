package saga

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/phases"
)

// The operators' reads and deletions on pgsaga_key, pgsaga_call and pgsaga_key_action.

// stuckCondition is what makes a key need attention: parked, or started with an expired lease
// (its process died and no one resumed it yet). It is written here only.
const stuckCondition = `(status = 'failed' OR (status = 'started' AND (locked_until IS NULL OR locked_until <= clock_timestamp())))`

// listKeysSQL lists keys newest first, filtered, after a keyset cursor ($6: whether there is
// one, then its created_at, tenant, actor and key), created at or after $12: the key table's
// index on created_at is a BRIN (a summary per range of pages, nearly free to maintain), which
// finds the keys of a time window but cannot hand them out in order, so a listing looks at a
// recent window first and widens it only when the window holds less than a page (listKeys).
const listKeysSQL = `SELECT ` + keyColumns + ` FROM pgsaga_key
WHERE ($1::text = '' OR status = $1)
  AND ($2::text = '' OR operation = $2)
  AND ($3::text = '' OR tenant_id = $3)
  AND (NOT $4::bool OR ` + stuckCondition + `)
  AND ($5::text = '' OR starts_with(key, $5))
  AND (NOT $6::bool OR (created_at, tenant_id, actor_id, key) < ($7::timestamptz, $8::text, $9::text, $10::text))
  AND created_at >= $12::timestamptz
ORDER BY created_at DESC, tenant_id DESC, actor_id DESC, key DESC
LIMIT $11`

// listWindows are how far back from the newest key wanted a listing looks, widening until a
// window holds a page: an hour, a day, a month, three years, then everything.
var listWindows = []time.Duration{time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 3 * 365 * 24 * time.Hour, 0}

// listKeys returns up to limit keys, newest first, after the cursor. A window that holds limit
// keys holds the newest limit keys of the whole listing (every key outside it is older), so
// the answer is that of a listing with no window.
func listKeys(ctx context.Context, q pgxQuerier, p *KeyListParams, after *keyCursor, limit int) ([]*Key, error) {
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
		rows, err := q.Query(ctx, listKeysSQL, string(p.State), p.Operation, p.Tenant, p.Stuck, p.KeyPrefix,
			after != nil, c.CreatedAt, c.Tenant, c.Actor, c.Key, limit, since)
		if err != nil {
			return nil, fmt.Errorf("error listing keys: %w", err)
		}
		keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Key, error) { return scanKey(row) })
		if err != nil {
			return nil, fmt.Errorf("error listing keys: %w", err)
		}
		if len(keys) == limit || w == 0 {
			return keys, nil
		}
	}
	panic("unreachable: the last window is unbounded")
}

// callReferencesSQL finds the keys that journaled calls under any of the references $1, with
// the provider ids their attempts recorded: per reference, an index scan of the key rows'
// entries (pgsaga_key_call_reference_idx) and one of pgsaga_call's (pgsaga_call_reference_idx),
// then each key by its primary key.
const callReferencesSQL = `SELECT c.reference, c.tenant_id, c.actor_id, c.key, k.status,
	coalesce(array_agg(DISTINCT c.provider_id ORDER BY c.provider_id) FILTER (WHERE c.provider_id IS NOT NULL), '{}')
FROM pgsaga_call_journal c
JOIN pgsaga_key k ON k.tenant_id = c.tenant_id AND k.actor_id = c.actor_id AND k.key = c.key
WHERE c.reference = ANY($1::text[])
GROUP BY c.reference, c.tenant_id, c.actor_id, c.key, k.status`

// pgxQuerier is a pool or a transaction.
type pgxQuerier interface {
	queryer
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// keyDetailSQL reads a key's call journal and history, oldest first.
const keyDetailSQL = `SELECT
	(SELECT coalesce(json_agg(json_build_object('step', c.step, 'attempt', c.attempt,
			'reference', c.reference, 'started_at', c.started_at, 'ended_at', c.ended_at, 'deadline', c.deadline,
			'max_in_flight_ms', c.max_in_flight_ms, 'outcome', c.outcome, 'provider_id', c.provider_id)
			ORDER BY c.started_at, c.attempt, c.step), '[]'::json)
		FROM pgsaga_call_journal c WHERE c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3),
	(SELECT coalesce(json_agg(json_build_object('at', a.at, 'by', a.by, 'action', a.action,
			'outcome', a.outcome, 'note', a.note, 'reference', a.reference) ORDER BY a.id), '[]'::json)
		FROM pgsaga_key_action a WHERE a.tenant_id = $1 AND a.actor_id = $2 AND a.key = $3)`

func getKeyDetail(ctx context.Context, q pgxQuerier, k *Key) error {
	var calls, history []byte
	if err := q.QueryRow(ctx, keyDetailSQL, k.Scope.Tenant, k.Scope.Actor, k.Key).Scan(&calls, &history); err != nil {
		return fmt.Errorf("error reading the key's calls and history: %w", err)
	}
	journal, err := decodeCalls(calls, nil)
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
	if err := json.Unmarshal(history, &actions); err != nil {
		return fmt.Errorf("error decoding the key's history: %w", err)
	}
	k.History = make([]KeyAction, 0, len(actions))
	for _, a := range actions {
		k.History = append(k.History, KeyAction{At: a.At, By: a.By, Action: KeyActionKind(a.Action),
			Outcome: phases.SettleOutcome(deref(a.Outcome)), Note: deref(a.Note), Reference: deref(a.Reference)})
	}
	return nil
}

// countKeysSQL counts keys by operation and state, and the stuck ones, in one pass.
const countKeysSQL = `SELECT operation, status, count(*), count(*) FILTER (WHERE ` + stuckCondition + `)
	FROM pgsaga_key GROUP BY operation, status`

// oldestStuckSQL is the stuck key that has waited longest (by its last change).
const oldestStuckSQL = `SELECT ` + keyColumns + ` FROM pgsaga_key WHERE ` + stuckCondition + `
	ORDER BY updated_at LIMIT 1`

// estimateKeysSQL counts started and parked keys exactly (few, and indexed) and estimates the
// completed ones from the planner's statistics, so that a metrics scrape never counts the table.
const estimateKeysSQL = `SELECT
	(SELECT count(*) FROM pgsaga_key WHERE status = 'started'),
	(SELECT count(*) FROM pgsaga_key WHERE status = 'failed'),
	(SELECT count(*) FROM pgsaga_key WHERE ` + stuckCondition + `),
	(SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'pgsaga_key'::regclass)`
