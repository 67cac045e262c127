package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/migrations"
)

// Migrate serialises runs with a session's advisory lock, which a pooler in transaction
// pooling mode does not keep: the lock would stay behind on whichever server session took it.
// Through one, Migrate refuses before it takes the lock, and changes nothing; on an up-to-date
// database it only reads, and succeeds.
func TestPgBouncerMigrateRefusesATransactionPooler(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	pooled := db.PooledPool(t, "default_query_exec_mode=cache_describe")
	// No notification can come through the pooler: a short deadline decides as well as 5s.
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := migrations.Migrate(ctx, pooled, nil)
	require.ErrorIs(t, err, migrations.ErrNoSession)
	require.ErrorContains(t, err, "transaction pooling")
	require.ErrorIs(t, migrations.Validate(t.Context(), db.Pool, nil), migrations.ErrMissingVersion, "nothing was applied")

	// Validate only reads: it works through the pooler.
	require.ErrorIs(t, migrations.Validate(t.Context(), pooled, nil), migrations.ErrMissingVersion)
	_, err = migrations.Migrate(t.Context(), db.Pool, nil)
	require.NoError(t, err)
	require.NoError(t, migrations.Validate(t.Context(), pooled, nil))
	res, err := migrations.Migrate(t.Context(), pooled, nil)
	require.NoError(t, err, "nothing to apply: nothing to lock")
	require.Empty(t, res.Applied)
	require.Empty(t, res.RiverApplied)
}
