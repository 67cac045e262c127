package pgpipe_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
)

// TestBeforeBeginRunsOnceBeforeTheFirstRoundTrip: the hook runs on the transaction's connection,
// outside it, in a round trip of its own right before the first statement and BEGIN; never for
// a transaction that sends nothing.
func TestBeforeBeginRunsOnceBeforeTheFirstRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFixture(t)
	runs := 0
	hook := func(ctx context.Context, conn *pgx.Conn) error {
		runs++
		var n int
		return conn.QueryRow(ctx, `SELECT count(*) FROM item`).Scan(&n)
	}
	tx, err := pgpipe.Begin(ctx, f.pool, &pgpipe.BeginOpts{BeforeBegin: hook})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (2)`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 1, runs)
	f.requireTrips("SELECT count", "begin + INSERT", "INSERT", "commit")
	require.Equal(t, []int{1, 2}, f.ids())

	quiet, err := pgpipe.Begin(ctx, f.pool, &pgpipe.BeginOpts{BeforeBegin: hook})
	require.NoError(t, err)
	var one int
	require.NoError(t, quiet.CommitRow(ctx, func(row pgx.Row) error { return row.Scan(&one) }, `SELECT 1`))
	require.Equal(t, 1, runs, "a transaction that sends no statement of its own never runs the hook")
	f.requireClean()
}

// TestBeforeBeginRefusal: a hook's error is the first statement's, nothing is sent, every later
// call but Rollback returns it, and the connection goes back clean.
func TestBeforeBeginRefusal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	refused := errors.New("the key exists")
	for _, c := range []struct {
		name string
		send func(tx pgx.Tx) error
	}{
		{"Exec", func(tx pgx.Tx) error { _, err := tx.Exec(ctx, `INSERT INTO item (id) VALUES (1)`); return err }},
		{"QueryRow", func(tx pgx.Tx) error {
			var id int
			return tx.QueryRow(ctx, `INSERT INTO item (id) VALUES (1) RETURNING id`).Scan(&id)
		}},
		{"SendBatch", func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO item (id) VALUES (1)`)
			return tx.SendBatch(ctx, b).Close()
		}},
		{"CopyFrom", func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"item"}, []string{"id"}, pgx.CopyFromRows([][]any{{1}}))
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tx, err := pgpipe.Begin(ctx, f.pool, &pgpipe.BeginOpts{
				BeforeBegin: func(context.Context, *pgx.Conn) error { return refused }})
			require.NoError(t, err)
			require.ErrorIs(t, c.send(tx), refused)
			require.False(t, tx.Begun())
			_, err = tx.Exec(ctx, `INSERT INTO item (id) VALUES (2)`)
			require.ErrorIs(t, err, refused, "refused for good")
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO item (id) VALUES (3)`)
			require.ErrorIs(t, tx.CommitWith(ctx, b), refused, "nothing commits")
			require.Empty(t, f.ids())
			f.requireClean()
		})
	}
}
