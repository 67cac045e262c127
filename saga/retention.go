package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/keystore"
)

// Retention: the runs that delete completed keys past their window, leaving a tombstone for
// each, and the tombstones past theirs, batch after batch (the statements are the key store's
// retention.sql, which says why each batch costs the same per key at any size); and what a claim
// that meets a tombstone answers. Migration 010 has the index, the tombstone table and the
// functions they use.

// DefaultTombstoneRetention is how long a deleted key's tombstone is kept, from the key's
// completion: 30 days.
const DefaultTombstoneRetention = 30 * 24 * time.Hour

// sqlstateExpired is pgsaga_key_expired's: a claim met the key or its tombstone deleted by
// retention (migration 013).
const sqlstateExpired = "PGS02"

// errTombstoned means a claim met the key's tombstone and wrote nothing: the request is
// answered from the tombstone (expired), never run.
var errTombstoned = errors.New("the key's record was deleted by retention")

// pagesPerBatch is how many heap pages a batch by age reads for a batch of n keys: a page holds
// about eight completed keys.
func pagesPerBatch(n int) int64 { return int64(max(n/8, 1)) }

// retentionRun is one run of retention GC: its batch size and tombstone window, and what it
// deleted so far.
type retentionRun struct {
	q          *keystore.Queries
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
	p := &keystore.DeleteByExpiryParams{After: pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true},
		Batch: int32(r.batch), TombstoneMs: r.tombstones}
	for {
		out, err := r.q.DeleteByExpiry(ctx, p)
		if err != nil {
			return fmt.Errorf("error deleting expired keys: %w", err)
		}
		if err := r.batchDone(ctx, int(out.Deleted)); err != nil || int(out.Deleted) < r.batch {
			return err
		}
		p.After = out.LastExpiry
	}
}

// byAge deletes every completed key that completed at least olderThan ago, range of pages after
// range of pages.
func (r *retentionRun) byAge(ctx context.Context, olderThan time.Duration) error {
	pages, err := r.q.HeapPages(ctx)
	if err != nil {
		return fmt.Errorf("error deleting expired keys: %w", err)
	}
	step := pagesPerBatch(r.batch)
	p := &keystore.DeleteByAgeParams{TombstoneMs: r.tombstones, OlderThanMs: olderThan.Milliseconds()}
	for p.FromPage = 0; p.FromPage < pages; p.FromPage += step {
		p.ToPage = p.FromPage + step
		n, err := r.q.DeleteByAge(ctx, p)
		if err != nil {
			return fmt.Errorf("error deleting expired keys: %w", err)
		}
		if err := r.batchDone(ctx, int(n)); err != nil {
			return err
		}
	}
	return nil
}

// expireTombstones deletes every tombstone past its window.
func (r *retentionRun) expireTombstones(ctx context.Context) error {
	p := &keystore.DeleteTombstonesParams{After: pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true},
		Batch: int32(r.batch)}
	for {
		out, err := r.q.DeleteTombstones(ctx, p)
		if err != nil {
			return fmt.Errorf("error deleting expired tombstones: %w", err)
		}
		if int(out.Deleted) < r.batch {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("error deleting expired tombstones: %w", err)
		}
		p.After = out.LastExpiry
	}
}

func countExpired(ctx context.Context, q *keystore.Queries, olderThan *time.Duration) (int, error) {
	var (
		n   int32
		err error
	)
	if olderThan != nil {
		n, err = q.CountByAge(ctx, &keystore.CountByAgeParams{OlderThanMs: olderThan.Milliseconds()})
	} else {
		n, err = q.CountByExpiry(ctx)
	}
	if err != nil {
		return 0, fmt.Errorf("error counting expired keys: %w", err)
	}
	return int(n), nil
}

// tombstone is what a deleted key left: its operation, whether a request is the one it held,
// and when it completed.
type tombstone struct {
	operation   string
	sameRequest bool
	completedAt time.Time
}

// readTombstone reads req's key's tombstone, nil when it has none (any longer).
func readTombstone(ctx context.Context, q keystore.DBTX, req *Request, hash []byte) (*tombstone, error) {
	row, err := keystore.New(q).ReadTombstone(ctx, &keystore.ReadTombstoneParams{TenantID: req.Scope.Tenant,
		ActorID: req.Scope.Actor, Key: req.Key, Method: req.Method, Path: req.Path, RequestHash: hash})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("error reading the key's tombstone: %w", err)
	}
	return &tombstone{operation: row.Operation, sameRequest: row.SameRequest, completedAt: row.CompletedAt.Time}, nil
}

// expired answers a request whose claim met its key's tombstone: the same request again is a
// *KeyExpiredError (410, definitive: it never runs), another request under the key
// ErrKeyReused, as if the key were stored. A tombstone that expired since the claim makes the
// key new: the client's retry runs it.
func (e *execution) expired(ctx context.Context, q keystore.DBTX) (*Result, error) {
	t, err := readTombstone(ctx, q, e.req, e.hash)
	switch {
	case err != nil:
		return nil, transient(err, 0)
	case t == nil:
		return nil, transient(errors.New("the key's tombstone expired while it was read; retry"), 0)
	case !isOperation(e.op, t.operation) || !t.sameRequest:
		return nil, ErrKeyReused
	}
	return nil, &KeyExpiredError{CompletedAt: t.completedAt}
}

// isTombstoned reports whether err is pgsaga_key_expired's.
func isTombstoned(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlstateExpired
}
