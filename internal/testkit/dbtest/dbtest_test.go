package dbtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

func TestMain(m *testing.M) {
	Main(m, &Opts{Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
		_, err := pool.Exec(ctx, "CREATE TABLE item (name text PRIMARY KEY)")
		return err
	}})
}

// TestIsolation runs two parallel tests that write the same key: each sees only its own row.
func TestIsolation(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"a", "b"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			db := NewDB(t)
			_, err := db.Pool.Exec(t.Context(), "INSERT INTO item (name) VALUES ('same'), ($1)", who)
			require.NoError(t, err, "the template's table is there and empty")
			var names []string
			rows, err := db.Pool.Query(t.Context(), "SELECT name FROM item ORDER BY name")
			require.NoError(t, err)
			for rows.Next() {
				var n string
				require.NoError(t, rows.Scan(&n))
				names = append(names, n)
			}
			require.NoError(t, rows.Err())
			require.Equal(t, []string{who, "same"}, names)
		})
	}
}

// TestDroppedAfterTest checks the database is gone once its test has ended.
func TestDroppedAfterTest(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		db := NewDB(t)
		name = db.Name
		// A session the test leaves open must not keep the database alive.
		_, err := pgx.Connect(t.Context(), db.URL)
		require.NoError(t, err)
	})
	var n int
	require.NoError(t, current.admin.QueryRow(t.Context(),
		"SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	require.Zero(t, n, "database %s dropped", name)
}

func TestNames(t *testing.T) {
	t.Parallel()
	s := &suite{prefix: "pgsaga_123_abcdef"}
	require.Equal(t, "pgsaga_123_abcdef_1_testx_sub_case", s.dbName("TestX/Sub Case"))
	long := s.dbName("TestAVeryLongNameThatGoesOnAndOnAndOnForeverAndEver")
	require.LessOrEqual(t, len(long), 63)
	require.Equal(t, "postgres://u@h/other?sslmode=disable", withDatabase("postgres://u@h/db?sslmode=disable", "other"))
	require.Equal(t, "host=h dbname=db dbname=other", withDatabase("host=h dbname=db", "other"))
}

// BenchmarkCloneAndDrop measures what NewDB adds to a test: clone the template, drop the clone.
func BenchmarkCloneAndDrop(b *testing.B) {
	NewDB(b) // set up the server and template outside the timing
	ctx := b.Context()
	for b.Loop() {
		name := current.dbName("bench")
		_, err := current.admin.Exec(ctx, "CREATE DATABASE "+quote(name)+" TEMPLATE "+quote(current.template))
		require.NoError(b, err)
		_, err = current.admin.Exec(ctx, "DROP DATABASE "+quote(name)+" WITH (FORCE)")
		require.NoError(b, err)
	}
}

// TestSharedServer runs this binary's isolation tests twice at once against one server through
// PGSAGA_TEST_DATABASE_URL, then checks that they left no database behind.
func TestSharedServer(t *testing.T) {
	t.Parallel()
	c, err := pglocal.Start(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })

	errs := make(chan error, 2)
	for range 2 {
		go func() {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^(TestIsolation|TestDroppedAfterTest)$", "-test.count=3")
			cmd.Env = append(os.Environ(), EnvURL+"="+c.URL("postgres"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%w:\n%s", err, out)
			}
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)

	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), "SELECT datname FROM pg_database ORDER BY datname")
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"postgres", "template0", "template1"}, names, "templates and test databases dropped")
}

// TestDefaultMigrate checks that the default template holds pgsaga's and River's tables.
func TestDefaultMigrate(t *testing.T) {
	t.Parallel()
	c, err := pglocal.Start(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Stop()) })
	pool, err := newPool(t.Context(), c.URL("postgres"), 2)
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, defaultMigrate(t.Context(), pool))
	var n int
	require.NoError(t, pool.QueryRow(t.Context(),
		"SELECT count(*) FROM pg_tables WHERE tablename IN ('pgsaga_migration', 'river_job')").Scan(&n))
	require.Equal(t, 2, n)
}
