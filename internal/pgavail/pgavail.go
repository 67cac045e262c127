// Package pgavail tells a database that cannot serve now (down, starting up, shutting down, out
// of connections, a standby refusing writes while a failover is under way) from one that
// answered and refused (a wrong password, a missing table), which waiting does not change. The
// commands' wait for their database at start and the worker's start retries share this rule.
package pgavail

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// sqlstateReadOnly is read_only_sql_transaction: a write reached a standby, as happens while a
// replicated pair fails over or when a URL names a host that is no longer the primary.
const sqlstateReadOnly = "25006"

// Unavailable reports whether err means the database could not be reached or could not serve
// now: no answer at all (refused, reset, timed out, no such socket, a connection that broke)
// or an answer of SQLSTATE class 08 (connection exception), 53 (insufficient resources: too
// many connections, out of memory or disk) or 57 (operator intervention: shutting down, starting
// up, terminated by an administrator), or 25006 (a standby refusing a write). Any other answer
// means the database refused: false. A nil err is false.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	if pgErr.Code == sqlstateReadOnly {
		return true
	}
	for _, class := range []string{"08", "53", "57"} {
		if strings.HasPrefix(pgErr.Code, class) {
			return true
		}
	}
	return false
}
