package sagatest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// Each test's database is its own, migrated as Main's DBOpts say and set up by their Setup.
func TestNewDBIsMigratedAndOwn(t *testing.T) {
	t.Parallel()
	one, two := sagatest.NewDB(t), sagatest.NewDB(t)
	require.NotEqual(t, one.Name, two.Name)
	for _, db := range []*sagatest.DB{one, two} {
		var keys, bookings int
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT
			(SELECT count(*) FROM pgsaga_key), (SELECT count(*) FROM booking)`).Scan(&keys, &bookings))
		require.Zero(t, keys+bookings)
	}
	_, err := one.Pool.Exec(t.Context(), `INSERT INTO booking (key, what) VALUES ('k', 'seat')`)
	require.NoError(t, err)
	var seen int
	require.NoError(t, two.Pool.QueryRow(t.Context(), `SELECT count(*) FROM booking`).Scan(&seen))
	require.Zero(t, seen, "another test's rows are not there")
	require.NoError(t, one.Close(), "closing a test's database is left to its end")
}

// The variable users set is the one the project's own tests read.
func TestEnvDatabaseURLIsTheProjects(t *testing.T) {
	t.Parallel()
	require.Equal(t, dbtest.EnvURL, sagatest.EnvDatabaseURL)
}
