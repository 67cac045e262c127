package payments_test

import (
	"testing"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) {
	dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.MigrateWith(payments.Migrations())})
}
