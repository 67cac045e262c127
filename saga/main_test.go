package saga_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/migrations"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envKillProcess); role != "" {
		// This binary was started by a test as a process that kills itself (kill_test.go).
		os.Exit(runKillProcess(role))
	}
	dbtest.Main(m, &dbtest.Opts{Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
		_, err := migrations.Migrate(ctx, pool, &migrations.MigrateOpts{SkipRiver: true})
		return err
	}})
}
