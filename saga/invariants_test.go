package saga_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/dbtest"
)

// TestKeyInvariantsAreEnforcedByTheDatabase writes rows that break the key state machine
// directly, as a buggy writer would: each is refused by the named constraint.
func TestKeyInvariantsAreEnforcedByTheDatabase(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	insert := `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash,
		request_body, status, recovery_point, lease_token, response_status, response_body, completed_at, expires_at)
		VALUES ($1, 'a', $2, 'op', 'POST', '/x', '\x00', '', $3, $4, $5, $6, $7, $8, $9)`
	for _, tc := range []struct {
		name, tenant, key, status, rp, lease string
		respStatus                           any
		body                                 any
		done                                 bool
		constraint                           string
	}{
		{"started without a lease", "t", "key-00001", "started", "started", "", nil, nil, false, "pgsaga_key_state_machine"},
		{"started with a response", "t", "key-00002", "started", "started", "lease", 200, "{}", false, "pgsaga_key_state_machine"},
		{"completed without a response", "t", "key-00003", "completed", "finished", "lease", nil, nil, true, "pgsaga_key_state_machine"},
		{"completed before its last phase", "t", "key-00004", "completed", "charged", "lease", 200, "{}", true, "pgsaga_key_state_machine"},
		{"completed with a status that is not HTTP", "t", "key-00005", "completed", "finished", "lease", 700, "{}", true, "pgsaga_key_state_machine"},
		{"unknown status", "t", "key-00006", "paused", "started", "lease", nil, nil, false, "pgsaga_key_state_machine"},
		{"failed with a response", "t", "key-00007", "failed", "started", "lease", 200, "{}", false, "pgsaga_key_state_machine"},
		{"short key", "t", "k", "started", "started", "lease", nil, nil, false, "pgsaga_key_identity"},
		{"empty tenant", "", "key-00008", "started", "started", "lease", nil, nil, false, "pgsaga_key_identity"},
	} {
		var lease any
		if tc.lease != "" {
			lease = "5b0a4c4e-8f1e-4c55-9f5b-0d6f3d4c2a11"
		}
		var done any
		if tc.done {
			done = "2026-01-01T00:00:00Z"
		}
		var body any
		if tc.body != nil {
			body = []byte(tc.body.(string))
		}
		_, err := db.Pool.Exec(t.Context(), insert, tc.tenant, tc.key, tc.status, tc.rp, lease, tc.respStatus, body, done, done)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, tc.name)
		require.Equal(t, tc.constraint, pgErr.ConstraintName, tc.name)
	}
}
