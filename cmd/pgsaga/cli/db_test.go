package cli

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/migrations"
)

// serve and worker wait for a database that cannot answer now, not for one that refuses.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	pg := func(code string) error {
		return fmt.Errorf("error connecting to the database at x: %w", &pgconn.PgError{Code: code})
	}
	for _, tc := range []struct {
		name string
		err  error
		wait bool
	}{
		{"shutting down or starting up", pg("57P03"), true},
		{"terminated by the administrator", pg("57P01"), true},
		{"connection failure", pg("08006"), true},
		{"too many connections", pg("53300"), true},
		{"a standby refused a write", pg("25006"), true},
		{"crash shutdown", pg("57P02"), true},
		{"connection refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{"wrong password", pg("28P01"), false},
		{"no such database", pg("3D000"), false},
		{"missing migration", fmt.Errorf("error checking the schema: %w", migrations.ErrMissingVersion), false},
	} {
		require.Equal(t, tc.wait, databaseUnavailable(tc.err), tc.name)
	}
}
