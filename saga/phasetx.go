package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
)

// An atomic phase runs in a lazy transaction (internal/pgpipe) whose transaction control costs
// no round trip of its own:
//
//   - BEGIN travels with the phase's first statement.
//   - The key's write travels with COMMIT (CommitWith): the claim of a new key, or the advance
//     fenced by the lease token.
//   - A phase that sends no statement has no BEGIN and no COMMIT at all: the key's write goes
//     alone, autocommitted (one implicit transaction, all or nothing).
//
// So a phase costs the round trips of its own statements, plus one: a phase of one statement
// costs two round trips (BEGIN + statement; key write + COMMIT), a phase of none costs one.
// pgx's Tx would cost two more (BEGIN alone, COMMIT alone).

// beginPhase opens a phase's transaction; nothing is sent yet.
func beginPhase(ctx context.Context, db *pgxpool.Pool) (*pgpipe.Tx, error) {
	tx, err := pgpipe.Begin(ctx, db, nil)
	if err != nil {
		return nil, fmt.Errorf("error beginning a phase: %w", err)
	}
	return tx, nil
}

// commitPhase sends the key's write s and COMMIT in one round trip (or, when the phase sent
// nothing, s alone in an implicit transaction), and returns what the write reported. It returns
// errDuplicate when a claim found the key stored, and ErrLeaseLost when a fenced write found the
// lease taken over: in both the statement raised, so the COMMIT queued after it never ran and
// the phase committed nothing. The fence's error is recognised on the write's own result, read
// by its own callback: only the engine's write can say the lease was lost.
func commitPhase(ctx context.Context, tx *pgpipe.Tx, s *keyStatement, fenced bool) (*written, error) {
	b := &pgx.Batch{}
	out := &written{}
	lost := false
	qq := b.Queue(s.sql, s.args...)
	if s.exec {
		qq.Exec(func(pgconn.CommandTag) error { return nil })
	} else {
		qq.QueryRow(func(row pgx.Row) error {
			err := s.read(row, out)
			lost = fenced && isFence(err)
			return err
		})
	}
	err := tx.CommitWith(ctx, b)
	switch {
	case err == nil:
		return out, nil
	case lost:
		return nil, ErrLeaseLost
	}
	var committed *pgpipe.CommittedError
	if errors.As(err, &committed) {
		return nil, fmt.Errorf("error reading the key's write after it committed: %w", err)
	}
	return nil, asDuplicate(err)
}
