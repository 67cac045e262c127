package saga

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// beginPhase opens a phase's transaction; nothing is sent yet. before, when set, runs right before
// the transaction's first round trip (pgpipe.BeginOpts.BeforeBegin).
func beginPhase(ctx context.Context, db DB, before func(context.Context, *pgx.Conn) error) (*pgpipe.Tx, error) {
	var opts *pgpipe.BeginOpts
	if before != nil {
		opts = &pgpipe.BeginOpts{BeforeBegin: before}
	}
	tx, err := beginOn(ctx, db, opts)
	if err != nil {
		return nil, fmt.Errorf("error beginning a phase: %w", err)
	}
	return tx, nil
}

// confirmReads ends the transaction of a phase (or compensation) name that failed with err, so
// that what err decided can be recorded elsewhere. A rejection, a permanent failure or a failure
// the phase met in the data was decided on what the phase read, but its transaction commits
// nothing, so nothing showed that the server it read was still the primary: an old primary cut
// off from its synchronous standby (promoted meanwhile), not yet demoted, answers reads from
// data the new primary has moved past (an invoice created since is "not found"), and the outcome
// (a stored answer, a parked key) would then be recorded on the new primary for good. The
// rollback is therefore confirmed by a commit its standby must acknowledge
// (pgpipe.Tx.RollbackConfirmed); one that cannot be confirmed makes the failure transient.
func confirmReads(ctx context.Context, tx *pgpipe.Tx, name string, err error) error {
	if cerr := tx.RollbackConfirmed(ctx); cerr != nil {
		return fmt.Errorf("error confirming, after %q failed (%v), that its reads came from the primary: %w", name, err, cerr)
	}
	return err
}

// commitPhase sends the key's write s and COMMIT in one round trip (or, when the phase sent
// nothing, s alone in an implicit transaction), and returns what the write reported. It returns
// errDuplicate when a claim found the key stored, and ErrLeaseLost when a fenced write found the
// lease taken over: in both the statement raised, so the COMMIT queued after it never ran and
// the phase committed nothing. The fence's error is recognised on the write's own result, read
// by its own callback: only the engine's write can say the lease was lost.
func commitPhase(ctx context.Context, tx *pgpipe.Tx, s keyStatement, fenced bool) (*written, error) {
	out := &written{}
	lost := false
	var err error
	if s.exec {
		b := &pgx.Batch{}
		b.Queue(s.st.SQL, s.st.Args...).Exec(func(pgconn.CommandTag) error { return nil })
		err = tx.CommitWith(ctx, b)
	} else {
		err = tx.CommitRow(ctx, func(row pgx.Row) error {
			err := s.read(s.st, row, out)
			lost = fenced && s.fence(err)
			return err
		}, s.st.SQL, s.st.Args...)
	}
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
