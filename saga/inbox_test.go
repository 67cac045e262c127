package saga_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

func TestRecordInboxTx(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	ctx := t.Context()
	record := func(source, id string) bool {
		t.Helper()
		var fresh bool
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			var err error
			fresh, err = saga.RecordInboxTx(ctx, tx, source, id)
			return err
		}))
		return fresh
	}
	require.True(t, record("gateway", "evt-1"))
	require.False(t, record("gateway", "evt-1"), "a redelivery is not fresh")
	require.True(t, record("gateway", "evt-2"))
	require.True(t, record("bank", "evt-1"), "ids are per source")

	// A rolled-back transaction records nothing: the next delivery is fresh.
	tx, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	fresh, err := saga.RecordInboxTx(ctx, tx, "gateway", "evt-3")
	require.NoError(t, err)
	require.True(t, fresh)
	require.NoError(t, tx.Rollback(ctx))
	require.True(t, record("gateway", "evt-3"))

	for _, tc := range []struct{ source, id string }{{"", "x"}, {"s", ""}, {strings.Repeat("s", 256), "x"}, {"s", strings.Repeat("x", 256)}} {
		tx, err := db.Pool.Begin(ctx)
		require.NoError(t, err)
		_, err = saga.RecordInboxTx(ctx, tx, tc.source, tc.id)
		require.Error(t, err)
		require.NoError(t, tx.Rollback(ctx))
	}
}

// Concurrent deliveries of one event: exactly one transaction sees it fresh, whatever the
// interleaving; the others wait on the primary key and then see it applied.
func TestRecordInboxTxConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fresh int
	)
	for range 8 {
		wg.Go(func() {
			err := pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
				f, err := saga.RecordInboxTx(context.Background(), tx, "gateway", "evt-concurrent")
				if f {
					mu.Lock()
					fresh++
					mu.Unlock()
				}
				return err
			})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Equal(t, 1, fresh)
}
