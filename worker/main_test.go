package worker_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/internal/dbtest"
	"github.com/pgsaga/pgsaga/migrations"
)

func TestMain(m *testing.M) {
	dbtest.Main(m, &dbtest.Opts{Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
		_, err := migrations.Migrate(ctx, pool, payments.Migrations())
		return err
	}})
}
