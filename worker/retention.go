package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// GCOpts are optional settings for DeleteExpired.
type GCOpts struct {
	// OlderThan, when set, overrides each key's own expiry: completed keys that completed more
	// than OlderThan ago are deleted. Defaults to 0: a completed key is deleted once its
	// expires_at (its operation's retention window) has passed.
	OlderThan time.Duration
	// All deletes every completed key, whatever its age and window: an explicit age of zero
	// (`pgsaga gc --older-than 0s`), which OlderThan cannot say. OlderThan is then ignored.
	// Defaults to false.
	All bool
	// DryRun counts the keys that would be deleted and deletes nothing.
	DryRun bool
	// BatchSize is how many keys one DELETE removes, so that no statement holds many row locks
	// for long. Defaults to 1000.
	BatchSize int
	// OnBatch, when set, is called after each batch DELETE with the number of keys it deleted,
	// so a caller can show progress; not called with DryRun. Defaults to nil.
	OnBatch func(deleted int)
}

// Every statement retention runs on pgsaga_key lives here. Only completed keys are ever
// expired: started keys are in flight and failed keys wait for an operator.
const (
	// $1 is the age in milliseconds that overrides each key's window, NULL for none.
	expiredCondition = `status = 'completed' AND CASE
		WHEN $1::bigint IS NULL THEN expires_at <= now()
		ELSE completed_at <= now() - $1 * interval '1 millisecond' END`

	// deleteExpiredSQL deletes one batch. SKIP LOCKED leaves rows a request is reading under
	// lock (a replay, a takeover attempt) for a later batch instead of waiting for them.
	deleteExpiredSQL = `DELETE FROM pgsaga_key WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM pgsaga_key WHERE ` + expiredCondition + `
		LIMIT $2 FOR UPDATE SKIP LOCKED))`

	countExpiredSQL = `SELECT count(*) FROM pgsaga_key WHERE ` + expiredCondition
)

// DeleteExpired deletes completed keys past their retention, in batches, and returns how many
// it deleted (with DryRun, how many it would delete). Started and failed keys are never deleted.
// A retry of a deleted key runs its operation again as a new request, which is why the window
// must outlast every client's retries. Cancelling ctx stops between batches; the batches already
// deleted stay deleted.
func DeleteExpired(ctx context.Context, db *pgxpool.Pool, opts *GCOpts) (int, error) {
	if db == nil {
		return 0, errors.New("worker: DeleteExpired needs a database")
	}
	if opts == nil {
		opts = &GCOpts{}
	}
	if opts.OlderThan < 0 {
		return 0, fmt.Errorf("worker: GCOpts.OlderThan must not be negative, got %s", opts.OlderThan)
	}
	batch := opts.BatchSize
	if batch == 0 {
		batch = 1000
	}
	if batch < 0 {
		return 0, fmt.Errorf("worker: GCOpts.BatchSize must be positive, got %d", batch)
	}
	var olderThan *int64 // each key's own window
	switch ms := opts.OlderThan.Milliseconds(); {
	case opts.All:
		olderThan = new(int64)
	case opts.OlderThan > 0:
		olderThan = new(max(ms, 1))
	}
	if opts.DryRun {
		var n int
		if err := db.QueryRow(ctx, countExpiredSQL, olderThan).Scan(&n); err != nil {
			return 0, fmt.Errorf("error counting expired keys: %w", err)
		}
		return n, nil
	}
	total := 0
	for {
		tag, err := db.Exec(ctx, deleteExpiredSQL, olderThan, batch)
		if err != nil {
			return total, fmt.Errorf("error deleting expired keys: %w", err)
		}
		total += int(tag.RowsAffected())
		if opts.OnBatch != nil {
			opts.OnBatch(int(tag.RowsAffected()))
		}
		if tag.RowsAffected() < int64(batch) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("error deleting expired keys: %w", err)
		}
	}
}

// deleteInboxSQL deletes one batch of applied event ids older than $1 ms.
const deleteInboxSQL = `DELETE FROM pgsaga_inbox WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM pgsaga_inbox WHERE received_at < now() - $1 * interval '1 millisecond'
	LIMIT $2 FOR UPDATE SKIP LOCKED))`

// DeleteOldInbox deletes the ids of events applied more than olderThan ago from pgsaga_inbox, in
// batches of batchSize, and returns how many it deleted.
func DeleteOldInbox(ctx context.Context, db *pgxpool.Pool, olderThan time.Duration, batchSize int) (int, error) {
	if olderThan <= 0 || batchSize <= 0 {
		return 0, fmt.Errorf("worker: DeleteOldInbox needs a positive age and batch size, got %s and %d", olderThan, batchSize)
	}
	total := 0
	for {
		tag, err := db.Exec(ctx, deleteInboxSQL, olderThan.Milliseconds(), batchSize)
		if err != nil {
			return total, fmt.Errorf("error deleting old inbox entries: %w", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < int64(batchSize) {
			return total, nil
		}
	}
}
