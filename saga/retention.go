package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Retention: the statements that delete completed keys past their window, leaving a tombstone
// for each, and delete the tombstones past theirs; and what a claim that meets a tombstone
// answers. Migration 010 has the index, the tombstone table and the functions they use.
//
// Every batch costs the same per key, whatever the table's size and wherever its rows sit in
// the heap: a batch by expiry walks the partial index pgsaga_key_expires_idx from the expiry
// where the previous batch stopped, so it reads only what it deletes; a batch by age
// (OlderThan, which no index orders) reads the next range of the heap's pages, so that one run
// reads each page once.

// DefaultTombstoneRetention is how long a deleted key's tombstone is kept, from the key's
// completion: 30 days.
const DefaultTombstoneRetention = 30 * 24 * time.Hour

// sqlstateExpired is pgsaga_key_unexpired's: a claim met the key's tombstone.
const sqlstateExpired = "PGS02"

// errTombstoned means a claim met the key's tombstone and wrote nothing: the request is
// answered from the tombstone (expired), never run.
var errTombstoned = errors.New("the key's record was deleted by retention")

// deleteGoneSQL ends a batch's deletion, whose key rows are in gone: their call journal and
// history go with them, and each leaves its tombstone, kept until its completion plus $3 ms
// (none when that has passed already). A key completed again after its tombstone expired
// replaces that tombstone. It returns how many keys went and the latest expiry among them.
const deleteGoneSQL = `
	RETURNING tenant_id, actor_id, key, operation, method, path, request_hash, completed_at, expires_at),
calls AS (
	DELETE FROM pgsaga_call c USING gone g
	WHERE c.tenant_id = g.tenant_id AND c.actor_id = g.actor_id AND c.key = g.key),
actions AS (
	DELETE FROM pgsaga_key_action a USING gone g
	WHERE a.tenant_id = g.tenant_id AND a.actor_id = g.actor_id AND a.key = g.key),
tombstones AS (
	INSERT INTO pgsaga_key_tombstone (tenant_id, actor_id, key_hash, operation, request_digest, completed_at, expires_at)
	SELECT tenant_id, actor_id, pgsaga_key_hash(key), operation, pgsaga_request_digest(method, path, request_hash),
		completed_at, completed_at + $3::bigint * interval '1 millisecond'
	FROM gone WHERE completed_at + $3::bigint * interval '1 millisecond' > now()
	ON CONFLICT (tenant_id, actor_id, key_hash) DO UPDATE SET operation = EXCLUDED.operation,
		request_digest = EXCLUDED.request_digest, completed_at = EXCLUDED.completed_at, expires_at = EXCLUDED.expires_at)
SELECT count(*), max(expires_at) FROM gone`

// deleteByExpirySQL deletes up to $2 completed keys past their own expiry, in expiry order from
// $1 on (the previous batch's last expiry). SKIP LOCKED leaves a key a request holds under lock
// (a replay, a takeover attempt) to a later run instead of waiting for it. now() rather than
// clock_timestamp(): the index is searched by a constant.
const deleteByExpirySQL = `WITH gone AS (
	DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM pgsaga_key
		WHERE status = 'completed' AND expires_at >= $1 AND expires_at <= now()
		ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))` + deleteGoneSQL

// deleteByAgeSQL deletes the completed keys that completed at least $4 ms ago in the heap's
// pages from $1 up to (not including) $2: a TID range scan, which reads those pages only.
const deleteByAgeSQL = `WITH gone AS (
	DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM pgsaga_key
		WHERE ctid >= format('(%s,0)', $1::bigint)::tid AND ctid < format('(%s,0)', $2::bigint)::tid
			AND status = 'completed' AND completed_at <= now() - $4::bigint * interval '1 millisecond'
		FOR UPDATE SKIP LOCKED))` + deleteGoneSQL

// heapPagesSQL is how many pages the key table has now: a run by age walks them, and keys
// stored after it began are younger than any it deletes.
const heapPagesSQL = `SELECT pg_relation_size('pgsaga_key') / current_setting('block_size')::bigint`

// pagesPerBatch is how many heap pages a batch by age reads for a batch of n keys: a page holds
// about eight completed keys.
func pagesPerBatch(n int) int64 { return int64(max(n/8, 1)) }

// deleteTombstonesSQL deletes up to $2 tombstones past their window, in expiry order from $1 on.
const deleteTombstonesSQL = `WITH gone AS (
	DELETE FROM pgsaga_key_tombstone WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM pgsaga_key_tombstone WHERE expires_at >= $1 AND expires_at <= now()
		ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))
	RETURNING expires_at)
SELECT count(*), max(expires_at) FROM gone`

const (
	countByExpirySQL = `SELECT count(*) FROM pgsaga_key WHERE status = 'completed' AND expires_at <= now()`
	countByAgeSQL    = `SELECT count(*) FROM pgsaga_key
	WHERE status = 'completed' AND completed_at <= now() - $1::bigint * interval '1 millisecond'`
)

// retentionRun is one run of retention GC: its batch size and tombstone window, and what it
// deleted so far.
type retentionRun struct {
	q          pgxQuerier
	batch      int
	tombstones int64 // the tombstone window, in ms
	deleted    int
	onBatch    func(deleted int)
}

// batchDone counts a batch of n keys and says whether to go on: ctx's cancellation stops the
// run between batches.
func (r *retentionRun) batchDone(ctx context.Context, n int) error {
	r.deleted += n
	if r.onBatch != nil {
		r.onBatch(r.deleted)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("error deleting expired keys: %w", err)
	}
	return nil
}

// byExpiry deletes every completed key past its own expiry, batch after batch along the index.
func (r *retentionRun) byExpiry(ctx context.Context) error {
	after := time.Time{}
	for {
		var (
			n    int
			last *time.Time
		)
		if err := r.q.QueryRow(ctx, deleteByExpirySQL, after, r.batch, r.tombstones).Scan(&n, &last); err != nil {
			return fmt.Errorf("error deleting expired keys: %w", err)
		}
		if err := r.batchDone(ctx, n); err != nil || n < r.batch {
			return err
		}
		after = *last
	}
}

// byAge deletes every completed key that completed at least olderThan ago, range of pages after
// range of pages.
func (r *retentionRun) byAge(ctx context.Context, olderThan time.Duration) error {
	var pages int64
	if err := r.q.QueryRow(ctx, heapPagesSQL).Scan(&pages); err != nil {
		return fmt.Errorf("error deleting expired keys: %w", err)
	}
	step := pagesPerBatch(r.batch)
	for from := int64(0); from < pages; from += step {
		var (
			n    int
			last *time.Time
		)
		if err := r.q.QueryRow(ctx, deleteByAgeSQL, from, from+step, r.tombstones, olderThan.Milliseconds()).Scan(&n, &last); err != nil {
			return fmt.Errorf("error deleting expired keys: %w", err)
		}
		if err := r.batchDone(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// expireTombstones deletes every tombstone past its window and returns how many.
func (r *retentionRun) expireTombstones(ctx context.Context) (int, error) {
	after, total := time.Time{}, 0
	for {
		var (
			n    int
			last *time.Time
		)
		if err := r.q.QueryRow(ctx, deleteTombstonesSQL, after, r.batch).Scan(&n, &last); err != nil {
			return total, fmt.Errorf("error deleting expired tombstones: %w", err)
		}
		total += n
		if n < r.batch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("error deleting expired tombstones: %w", err)
		}
		after = *last
	}
}

func countExpired(ctx context.Context, q pgxQuerier, olderThan *time.Duration) (int, error) {
	var row pgx.Row
	if olderThan != nil {
		row = q.QueryRow(ctx, countByAgeSQL, olderThan.Milliseconds())
	} else {
		row = q.QueryRow(ctx, countByExpirySQL)
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting expired keys: %w", err)
	}
	return n, nil
}

// tombstone is what a deleted key left: its operation, whether a request is the one it held,
// and when it completed.
type tombstone struct {
	operation   string
	sameRequest bool
	completedAt time.Time
}

// readTombstoneSQL reads the tombstone of the key of $1-$3 and compares it with the request of
// $4-$6 (method, path, fingerprint) by pgsaga_request_digest, the rule GC wrote it by.
const readTombstoneSQL = `SELECT operation, request_digest = pgsaga_request_digest($4, $5, $6), completed_at
	FROM pgsaga_key_tombstone
	WHERE tenant_id = $1 AND actor_id = $2 AND key_hash = pgsaga_key_hash($3) AND expires_at > now()`

// readTombstone reads req's key's tombstone, nil when it has none (any longer).
func readTombstone(ctx context.Context, q queryer, req *Request, hash []byte) (*tombstone, error) {
	var t tombstone
	err := q.QueryRow(ctx, readTombstoneSQL, req.Scope.Tenant, req.Scope.Actor, req.Key, req.Method, req.Path, hash).
		Scan(&t.operation, &t.sameRequest, &t.completedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("error reading the key's tombstone: %w", err)
	}
	return &t, nil
}

// expired answers a request whose claim met its key's tombstone: the same request again is
// ErrKeyExpired (410, definitive: it never runs), another request under the key ErrKeyReused,
// as if the key were stored. A tombstone that expired since the claim makes the key new: the
// client's retry runs it.
func (e *execution) expired(ctx context.Context, q queryer) (*Result, error) {
	t, err := readTombstone(ctx, q, e.req, e.hash)
	switch {
	case err != nil:
		return nil, transient(err, 0)
	case t == nil:
		return nil, transient(errors.New("the key's tombstone expired while it was read; retry"), 0)
	case !e.op.Is(t.operation) || !t.sameRequest:
		return nil, ErrKeyReused
	}
	return nil, &KeyExpiredError{CompletedAt: t.completedAt}
}

// isTombstoned reports whether err is pgsaga_key_unexpired's.
func isTombstoned(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlstateExpired
}
