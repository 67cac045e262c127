package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

// atomic runs phase i in one transaction whose COMMIT travels with the key's write: for a key
// not yet stored the claim itself (a duplicate rolls the phase back, and is answered from the
// key as it is: errDuplicate), otherwise the advance fenced by the lease token. The write carries
// the outcome of the call just made and, when a call follows, that call's journal row with a
// renewed lease. A phase that responds stores the answer with the key (e.answer).
//
// A new key's first phase reads the key right before its first statement, on its own
// connection (readFirst): a key found stored stops the phase before its transaction begins
// (errKeyStored, answered from what was read). A phase that sends no statement reads nothing:
// its claim goes alone, and finds a stored key itself.
func (e *execution) atomic(ctx context.Context, i int) error {
	step := runstate.Step(e.op.Steps[i])
	ctx = e.bound(ctx)
	defer e.unbound()
	var readFirst func(context.Context, *pgx.Conn) error
	if e.stage == stageNew && e.head == nil {
		readFirst = e.readFirst
	}
	tx, err := beginPhase(ctx, e.c.cfg.DB, readFirst)
	if err != nil {
		return fmt.Errorf("error beginning phase %q: %w", step.Name(), err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	err = step.Atomic()(ctx, tx, e.st)
	if refused := tx.Refused(); refused != nil {
		// Whatever the phase made of its statement's error: it never began.
		e.st.Reset(e.committed)
		return refused
	}
	if err != nil {
		e.st.Reset(e.committed)
		return confirmReads(ctx, tx, step.Name(), err)
	}
	resp := e.stored()
	w := e.advance(step.Name(), resp)
	if next, ok := e.callAt(i + 1); ok && resp == nil {
		start, err := e.callStart(next)
		if err != nil {
			e.st.Reset(e.committed)
			return err
		}
		w.next = start
	}
	w.alone = !tx.Begun()
	s, err := w.statement(&e.h, e.requestFor(w), e.hash)
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	defer s.release()
	sent := time.Now()
	out, err := commitPhase(ctx, tx, s, e.stage != stageNew)
	if err != nil {
		e.st.Reset(e.committed)
		return err
	}
	e.wrote(w, out, sent)
	e.answer = resp
	return nil
}

// errKeyStored stops a new key's first phase before its first statement: the key is stored
// (e.head holds what was read).
var errKeyStored = errors.New("the key is stored")

// readFirst reads the key, before a new key's first phase sends its first statement, into
// e.head: errKeyStored when it is stored.
func (e *execution) readFirst(ctx context.Context, conn *pgx.Conn) error {
	found, err := readHead(ctx, conn, e.req.Scope, e.req.Key, e.keyHead())
	switch {
	case err != nil:
		return err
	case found:
		return errKeyStored
	}
	return nil
}
