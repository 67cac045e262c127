package pgavail_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/pgavail"
)

func TestUnavailable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused", fmt.Errorf("error connecting: %w", syscall.ECONNREFUSED), true},
		{"broken connection", io.ErrUnexpectedEOF, true},
		{"timed out", context.DeadlineExceeded, true},
		{"shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"starting up", &pgconn.PgError{Code: "57P03"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"standby", fmt.Errorf("error fetching: %w", &pgconn.PgError{Code: "25006"}), true},
		{"other transaction state", &pgconn.PgError{Code: "25P02"}, false},
		{"missing table", &pgconn.PgError{Code: "42P01"}, false},
		{"wrong password", &pgconn.PgError{Code: "28P01"}, false},
		{"missing database", &pgconn.PgError{Code: "3D000"}, false},
		{"short code", &pgconn.PgError{Code: "5"}, false},
		{"wrapped refusal", errors.Join(errors.New("starting"), &pgconn.PgError{Code: "42501"}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, pgavail.Unavailable(tc.err))
		})
	}
}
