package migrations_test

import (
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/migrations"
)

func TestMain(m *testing.M) { dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.NoMigrate}) }

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	require.ErrorIs(t, migrations.Validate(t.Context(), db.Pool, nil), migrations.ErrMissingVersion)

	first, err := migrations.Migrate(t.Context(), db.Pool, nil)
	require.NoError(t, err)
	require.NotEmpty(t, first.Applied)
	require.NotEmpty(t, first.RiverApplied)
	require.NoError(t, migrations.Validate(t.Context(), db.Pool, nil))

	second, err := migrations.Migrate(t.Context(), db.Pool, nil)
	require.NoError(t, err)
	require.Empty(t, second.Applied)
	require.Empty(t, second.RiverApplied)
}

func TestConcurrentMigrationsApplyEachVersionOnce(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	var wg sync.WaitGroup
	results := make([]*migrations.MigrateResult, 4)
	errs := make([]error, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = migrations.Migrate(t.Context(), db.Pool, nil)
		}()
	}
	wg.Wait()
	applied := 0
	for i := range results {
		require.NoError(t, errs[i])
		applied += len(results[i].Applied)
	}
	lines, err := migrations.Load(migrations.PgSaga())
	require.NoError(t, err)
	require.Equal(t, len(lines), applied, "each version is applied by exactly one of the runs")
}

func TestApplicationLineAndValidation(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	line := migrations.Line{Name: "shop", FS: fstest.MapFS{
		"001_things.up.sql":   {Data: []byte(`CREATE TABLE things (id int PRIMARY KEY)`)},
		"001_things.down.sql": {Data: []byte(`DROP TABLE things`)},
	}}
	opts := &migrations.MigrateOpts{Lines: []migrations.Line{line}, SkipRiver: true}
	_, err := migrations.Migrate(t.Context(), db.Pool, opts)
	require.NoError(t, err)
	require.NoError(t, migrations.Validate(t.Context(), db.Pool, opts))

	// A binary with a newer version than the database is told to migrate.
	newer := migrations.Line{Name: "shop", FS: fstest.MapFS{
		"001_things.up.sql":   line.FS.(fstest.MapFS)["001_things.up.sql"],
		"001_things.down.sql": line.FS.(fstest.MapFS)["001_things.down.sql"],
		"002_more.up.sql":     {Data: []byte(`ALTER TABLE things ADD COLUMN n int`)},
		"002_more.down.sql":   {Data: []byte(`ALTER TABLE things DROP COLUMN n`)},
	}}
	err = migrations.Validate(t.Context(), db.Pool, &migrations.MigrateOpts{Lines: []migrations.Line{newer}, SkipRiver: true})
	require.ErrorIs(t, err, migrations.ErrMissingVersion)
}

func TestLoadRefusesBrokenLines(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]fstest.MapFS{
		"gap": {
			"001_a.up.sql": {Data: []byte(`SELECT 1`)}, "001_a.down.sql": {Data: []byte(`SELECT 1`)},
			"003_c.up.sql": {Data: []byte(`SELECT 1`)}, "003_c.down.sql": {Data: []byte(`SELECT 1`)},
		},
		"missing down": {"001_a.up.sql": {Data: []byte(`SELECT 1`)}},
		"two names":    {"001_a.up.sql": {Data: []byte(`SELECT 1`)}, "001_b.down.sql": {Data: []byte(`SELECT 1`)}},
	} {
		_, err := migrations.Load(migrations.Line{Name: "x", FS: files})
		require.Error(t, err, name)
	}
	_, err := migrations.Load(migrations.PgSaga())
	require.NoError(t, err)
}

func TestDownMigrationsUndoTheUpOnes(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	_, err := migrations.Migrate(t.Context(), db.Pool, &migrations.MigrateOpts{SkipRiver: true})
	require.NoError(t, err)
	all, err := migrations.Load(migrations.PgSaga())
	require.NoError(t, err)
	for i := len(all) - 1; i >= 0; i-- {
		_, err := db.Pool.Exec(t.Context(), all[i].Down)
		require.NoError(t, err, all[i].Name)
	}
	var left int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgsaga_%' AND tablename <> 'pgsaga_migration'`).Scan(&left))
	require.Zero(t, left)
}
