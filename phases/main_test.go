package phases_test

import (
	"testing"

	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// The Examples run on a throwaway database; the tests need none, and start no server.
func TestMain(m *testing.M) {
	sagatest.Main(m, &sagatest.DBOpts{Migrations: &migrations.MigrateOpts{SkipRiver: true}})
}
