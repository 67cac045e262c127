package listencheck_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/listencheck"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.NoMigrate}) }

func TestHeard(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	pooled := db.PooledPool(t, "default_query_exec_mode=cache_describe")

	heard, err := listencheck.Heard(t.Context(), db.Pool, db.Pool)
	require.NoError(t, err)
	require.True(t, heard, "a direct session hears its own notification")

	heard, err = listencheck.Heard(t.Context(), db.Pool, pooled)
	require.NoError(t, err)
	require.True(t, heard, "and one sent through the pooler")

	// Through a transaction pooler nothing can be heard: a short deadline decides as well as
	// Timeout, and not hearing is no error.
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	heard, err = listencheck.Heard(ctx, pooled, db.Pool)
	require.NoError(t, err)
	require.False(t, heard, "a LISTEN through a transaction pooler hears nothing")

	// A caller that gives up is told so, not that nothing was heard.
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = listencheck.Heard(ctx, pooled, db.Pool)
	require.ErrorIs(t, err, context.Canceled)
}
