package worker_test

import (
	"os"
	"testing"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envWorkerProcess); role != "" {
		// This binary was started by a test as a worker process (leaderkill_test.go).
		os.Exit(runWorkerProcess(role))
	}
	dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.MigrateWith(payments.Migrations())})
}
