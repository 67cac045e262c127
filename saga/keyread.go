package saga

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/internal/sibling"
)

// The operators' read API: what the CLI, the console and the worker's metrics use instead of
// SQL of their own. Every call has a Tx twin for callers that hold a transaction.

// KeyGet reads one key with its call journal (Key.Calls) and its history (Key.History). It
// returns ErrKeyNotFound when the scope has no such key.
func (c *Client) KeyGet(ctx context.Context, scope Scope, key string) (*Key, error) {
	return keyGet(ctx, c.cfg.DB, scope, key)
}

// KeyGetTx is KeyGet in the caller's transaction.
func (c *Client) KeyGetTx(ctx context.Context, tx pgx.Tx, scope Scope, key string) (*Key, error) {
	return keyGet(ctx, tx, scope, key)
}

func keyGet(ctx context.Context, q pgxQuerier, scope Scope, key string) (*Key, error) {
	k, err := lookupKey(ctx, q, scope, key)
	if err != nil {
		return nil, err
	}
	if err := getKeyDetail(ctx, q, k); err != nil {
		return nil, err
	}
	return k, nil
}

// KeyListParams filter and page a key listing. The zero value lists every key, newest first,
// 100 at a time.
type KeyListParams struct {
	// State keeps keys in this state. Defaults to "" (any).
	State KeyStatus
	// Operation keeps keys of this operation. Defaults to "" (any).
	Operation string
	// Tenant keeps this tenant's keys. Defaults to "" (any).
	Tenant string
	// Stuck keeps keys that need attention: parked, or started with an expired lease.
	// Defaults to false.
	Stuck bool
	// KeyPrefix keeps keys that start with it. Defaults to "" (any).
	KeyPrefix string
	// Limit is the page size, at most 10,000. Defaults to 100.
	Limit int
	// Cursor continues a listing after the page that returned it (KeyListResult.NextCursor).
	// Defaults to "" (the first page).
	Cursor string
}

// KeyListResult is one page of keys.
type KeyListResult struct {
	// Keys are newest first (by creation time, then scope and key), without calls or history.
	Keys []*Key
	// NextCursor continues the listing; "" on the last page.
	NextCursor string
}

// errInvalidCursor is the error of a KeyListParams.Cursor that no listing returned.
var errInvalidCursor = &InvalidRequestError{Err: errors.New("saga: invalid key list cursor")}

// KeyList lists keys, newest first, with keyset pagination: a page is the same whatever was
// inserted since the listing began, and a key is listed at most once. It returns an
// *InvalidRequestError for params it refuses.
func (c *Client) KeyList(ctx context.Context, p *KeyListParams) (*KeyListResult, error) {
	return keyList(ctx, c.cfg.DB, p)
}

// KeyListTx is KeyList in the caller's transaction.
func (c *Client) KeyListTx(ctx context.Context, tx pgx.Tx, p *KeyListParams) (*KeyListResult, error) {
	return keyList(ctx, tx, p)
}

func keyList(ctx context.Context, q pgxQuerier, p *KeyListParams) (*KeyListResult, error) {
	if p == nil {
		p = &KeyListParams{}
	}
	limit := p.Limit
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > 10_000:
		return nil, &InvalidRequestError{Err: fmt.Errorf("saga: KeyListParams.Limit must be 1-10000, got %d", p.Limit)}
	}
	switch p.State {
	case "", KeyStatusStarted, KeyStatusCompleted, KeyStatusParked:
	default:
		return nil, &InvalidRequestError{Err: fmt.Errorf("saga: KeyListParams.State must be started, completed or failed, got %q", p.State)}
	}
	var after *keyCursor
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		after = c
	}
	// One more than a page tells whether there is a next one.
	keys, err := listKeys(ctx, q, p, after, limit+1)
	if err != nil {
		return nil, err
	}
	res := &KeyListResult{Keys: keys}
	if len(keys) > limit {
		res.Keys = keys[:limit]
		last := res.Keys[limit-1]
		res.NextCursor = encodeCursor(&keyCursor{CreatedAt: last.CreatedAt, Tenant: last.Scope.Tenant, Actor: last.Scope.Actor, Key: last.Key})
	}
	return res, nil
}

// keyCursor is the last key of a page.
type keyCursor struct {
	CreatedAt time.Time `json:"c"`
	Tenant    string    `json:"t"`
	Actor     string    `json:"a"`
	Key       string    `json:"k"`
}

func encodeCursor(c *keyCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*keyCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errInvalidCursor
	}
	var c keyCursor
	if err := json.Unmarshal(b, &c); err != nil || c.CreatedAt.IsZero() || c.Key == "" {
		return nil, errInvalidCursor
	}
	// A forged cursor must not reach the database with text it refuses (an error, not a page).
	for _, s := range []string{c.Tenant, c.Actor, c.Key} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return nil, errInvalidCursor
		}
	}
	return &c, nil
}

// KeyDeleteExpiredParams say which completed keys KeyDeleteExpired deletes.
type KeyDeleteExpiredParams struct {
	// OlderThan, when set, overrides each key's own expiry (its operation's retention): every
	// completed key that completed at least OlderThan ago is deleted (0: every completed key).
	// Such a run reads the whole key table once, as no index orders keys by completion.
	// Defaults to nil: a completed key is deleted once its own retention has passed.
	OlderThan *time.Duration
	// TombstoneRetention is how long, from its completion, a deleted key's tombstone is kept: a
	// retry of its request within it is answered *KeyExpiredError (410) and never runs. It
	// should outlast the longest retention of any operation, or a key past it leaves no
	// tombstone. Defaults to DefaultTombstoneRetention (30 days).
	TombstoneRetention time.Duration
	// DryRun counts the keys that would be deleted and deletes nothing. Defaults to false.
	DryRun bool
	// BatchSize is how many keys one statement deletes, so that none holds many row locks for
	// long (with OlderThan, the keys of BatchSize/8 heap pages). Defaults to 1000.
	BatchSize int
	// OnBatch, when set, is called after each batch with the total deleted so far (a progress
	// bar). Defaults to nil.
	OnBatch func(deleted int)
}

// KeyDeleteExpired deletes completed keys past their retention, with their call journals and
// histories, in batches, and returns how many it deleted (with DryRun, how many it would).
// Each leaves a tombstone, so that a retry of its request answers *KeyExpiredError (410) instead
// of running again; then the tombstones past TombstoneRetention are deleted. Started and parked
// keys are never deleted. Each batch costs the same per key whatever the table's size.
// Cancelling ctx stops between batches; the batches already deleted stay deleted.
func (c *Client) KeyDeleteExpired(ctx context.Context, p *KeyDeleteExpiredParams) (int, error) {
	return keyDeleteExpired(ctx, c.cfg.DB, p)
}

// KeyDeleteExpiredTx is KeyDeleteExpired in the caller's transaction (whose commit makes the
// deletions final).
func (c *Client) KeyDeleteExpiredTx(ctx context.Context, tx pgx.Tx, p *KeyDeleteExpiredParams) (int, error) {
	return keyDeleteExpired(ctx, tx, p)
}

func keyDeleteExpired(ctx context.Context, q pgxQuerier, p *KeyDeleteExpiredParams) (int, error) {
	if p == nil {
		p = &KeyDeleteExpiredParams{}
	}
	if p.OlderThan != nil && *p.OlderThan < 0 {
		return 0, fmt.Errorf("saga: KeyDeleteExpiredParams.OlderThan must not be negative, got %s", *p.OlderThan)
	}
	tombstones := p.TombstoneRetention
	switch {
	case tombstones == 0:
		tombstones = DefaultTombstoneRetention
	case tombstones < 0:
		return 0, fmt.Errorf("saga: KeyDeleteExpiredParams.TombstoneRetention must be positive, got %s", tombstones)
	}
	batch := p.BatchSize
	switch {
	case batch == 0:
		batch = 1000
	case batch < 0:
		return 0, fmt.Errorf("saga: KeyDeleteExpiredParams.BatchSize must be positive, got %d", batch)
	}
	store := keystore.New(q)
	if p.DryRun {
		return countExpired(ctx, store, p.OlderThan)
	}
	run := &retentionRun{q: store, batch: batch, tombstones: tombstones.Milliseconds(), onBatch: p.OnBatch}
	var err error
	if p.OlderThan != nil {
		err = run.byAge(ctx, *p.OlderThan)
	} else {
		err = run.byExpiry(ctx)
	}
	if err != nil {
		return run.deleted, err
	}
	return run.deleted, run.expireTombstones(ctx)
}

// KeyCounts is how many keys there are, by state and by operation, for an overview.
type KeyCounts struct {
	// ByState counts every key by state.
	ByState map[KeyStatus]int
	// ByOperation counts each operation's keys by state.
	ByOperation map[string]map[KeyStatus]int
	// Stuck counts the keys that need attention (parked, or started with an expired lease).
	Stuck int
	// OldestStuck is the stuck key that has waited longest since its last change, or nil.
	OldestStuck *Key
}

// KeyCount counts keys by state and operation, exactly (it reads the whole table: for an
// operator's overview, not for a metrics scrape, which reads an estimate).
func (c *Client) KeyCount(ctx context.Context) (*KeyCounts, error) {
	rows, err := keystore.New(c.cfg.DB).CountKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("error counting keys: %w", err)
	}
	out := &KeyCounts{ByState: map[KeyStatus]int{}, ByOperation: map[string]map[KeyStatus]int{}}
	for _, r := range rows {
		status, n := KeyStatus(r.Status), int(r.Keys)
		out.ByState[status] += n
		if out.ByOperation[r.Operation] == nil {
			out.ByOperation[r.Operation] = map[KeyStatus]int{}
		}
		out.ByOperation[r.Operation][status] += n
		out.Stuck += int(r.Stuck)
	}
	if out.Stuck > 0 {
		if out.OldestStuck, err = oldestStuck(ctx, c.cfg.DB); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// KeyEstimate reads a sibling.KeyEstimate without counting the whole table.
func (o *internalOps) KeyEstimate(ctx context.Context) (*sibling.KeyEstimate, error) {
	r, err := keystore.New(o.c.cfg.DB).EstimateKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("error estimating keys: %w", err)
	}
	e := sibling.KeyEstimate{Started: int(r.Started), Parked: int(r.Parked), Stuck: int(r.Stuck)}
	e.CompletedEstimate = max(int(r.Total)-e.Started-e.Parked, 0)
	return &e, nil
}
