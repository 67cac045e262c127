package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RecordInboxTx records that the event eventID from source is being applied, in the caller's
// transaction, and reports whether it is fresh. Apply the event's effect in the same transaction
// only when fresh is true: false means an earlier delivery was applied and committed, so this
// one is a duplicate to acknowledge and skip. A concurrent delivery of the same event blocks on
// the primary key until the first transaction ends, then sees false if it committed (or takes
// over if it rolled back), so the effect commits once however many times the event arrives.
//
// Event ids are scoped by source: the same id from two sources is two events. Pass as source
// the sender you authenticated (the one whose signature verified), never a value read from the
// event: a sender that could name the source could record another sender's ids first, and that
// sender's events would then be skipped as duplicates.
func RecordInboxTx(ctx context.Context, tx pgx.Tx, source, eventID string) (fresh bool, err error) {
	if source == "" || len(source) > 255 {
		return false, errors.New("saga: inbox source must be 1-255 characters")
	}
	if eventID == "" || len(eventID) > 255 {
		return false, errors.New("saga: inbox event id must be 1-255 characters")
	}
	var one int
	err = tx.QueryRow(ctx, `INSERT INTO pgsaga_inbox (source, event_id) VALUES ($1, $2)
		ON CONFLICT DO NOTHING RETURNING 1`, source, eventID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error recording inbox event: %w", err)
	}
	return true, nil
}
