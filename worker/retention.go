package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// deleteInboxSQL deletes one batch of applied event ids older than $1 ms.
const deleteInboxSQL = `DELETE FROM pgsaga_inbox WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM pgsaga_inbox WHERE received_at < now() - $1 * interval '1 millisecond'
	LIMIT $2 FOR UPDATE SKIP LOCKED))`

// deleteOldInbox deletes the ids of events applied more than olderThan ago from pgsaga_inbox, in
// batches of batchSize, and returns how many it deleted.
func deleteOldInbox(ctx context.Context, db *pgxpool.Pool, olderThan time.Duration, batchSize int) (int, error) {
	if olderThan <= 0 || batchSize <= 0 {
		return 0, fmt.Errorf("worker: inbox retention needs a positive age and batch size, got %s and %d", olderThan, batchSize)
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
