package saga_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// TestKeyConstraintsRefuseBrokenRows: the schema enforces the key state machine and the call
// journal's outcome classes. Each kind of row they refuse is written directly, as a buggy
// writer would, and refused by its constraint; the valid rows beside them are stored.
func TestKeyConstraintsRefuseBrokenRows(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	insert := `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash,
		request_body, status, recovery_point, lease_token, response_status, response_body, completed_at, expires_at,
		attempts, call_step, call_started_at, call_deadline, call_outcome)
		VALUES ('t', 'a', $1, 'op', 'POST', '/x', '\x00', '', $2, $3, $4, $5, $6, $7, $7, $8,
			CASE WHEN $9::text IS NOT NULL THEN 'charge' END, now(), now(), $9)`
	const lease = "5b0a4c4e-8f1e-4c55-9f5b-0d6f3d4c2a11"
	const at = "2026-01-01T00:00:00Z"
	const stateMachine = "pgsaga_key_state_machine"
	for _, tc := range []struct {
		name, key, status, rp         string
		lease, respStatus, body, done any
		attempts                      int
		outcome                       any
		refusedBy                     string // "" for a valid row
	}{
		{"started", "valid-00001", "started", "reserve", lease, nil, nil, nil, 1, nil, ""},
		{"completed", "valid-00002", "completed", "finished", nil, 201, "{}", at, 2, "succeeded", ""},
		{"failed", "valid-00003", "failed", "reserve", lease, nil, nil, nil, 3, "declined", ""},
		{"started at its first call", "valid-00004", "started", "created", lease, nil, nil, nil, 1, nil, ""},
		{"started without a lease", "key-00001", "started", "started", nil, nil, nil, nil, 1, nil, stateMachine},
		{"started with a response", "key-00002", "started", "started", lease, 200, "{}", nil, 1, nil, stateMachine},
		{"completed without a response", "key-00003", "completed", "finished", lease, nil, nil, at, 1, nil, stateMachine},
		{"completed with a status and no body", "key-00009", "completed", "finished", lease, 200, nil, at, 1, nil, stateMachine},
		{"completed without its expiry", "key-00010", "completed", "finished", lease, 200, "{}", nil, 1, nil, stateMachine},
		{"completed before its last phase", "key-00004", "completed", "charged", lease, 200, "{}", at, 1, nil, stateMachine},
		{"completed with a status that is not HTTP", "key-00005", "completed", "finished", lease, 700, "{}", at, 1, nil, stateMachine},
		{"unknown status", "key-00006", "paused", "started", lease, nil, nil, nil, 1, nil, stateMachine},
		{"failed with a response", "key-00007", "failed", "started", lease, 200, "{}", nil, 1, nil, stateMachine},
		{"no attempt", "key-00011", "started", "started", lease, nil, nil, nil, 0, nil, stateMachine},
		{"a call outcome that is no class", "key-00012", "started", "started", lease, nil, nil, nil, 1, "maybe", stateMachine},
	} {
		var body any
		if tc.body != nil {
			body = []byte(tc.body.(string))
		}
		_, err := db.Pool.Exec(t.Context(), insert, tc.key, tc.status, tc.rp, tc.lease, tc.respStatus, body, tc.done,
			tc.attempts, tc.outcome)
		if tc.refusedBy == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		requireCheckViolation(t, err, tc.refusedBy, tc.name)
	}

	// An update that would leave a broken row is refused the same way.
	_, err := db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET status = 'completed' WHERE key = 'valid-00001'`)
	requireCheckViolation(t, err, stateMachine, "completed by an update that stores no response")

	// pgsaga_call's rows: an outcome is one of the five classes, or NULL while the call is under way.
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, started_at, deadline, outcome)
		VALUES ('t', 'a', 'valid-00003', 'charge', 2, now(), now(), 'succeeded'),
		       ('t', 'a', 'valid-00003', 'refund', 1, now(), now(), NULL)`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, started_at, deadline, outcome)
		VALUES ('t', 'a', 'valid-00003', 'charge', 3, now(), now(), 'maybe')`)
	requireCheckViolation(t, err, "pgsaga_call_outcome", "a journal row whose outcome is no class")
}

// requireCheckViolation requires err to be the refusal of CHECK constraint name.
func requireCheckViolation(t *testing.T, err error, name, what string) {
	t.Helper()
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "%s: refused by the database, got %v", what, err)
	require.Equal(t, "23514", pgErr.Code, "%s: a check violation", what)
	require.Equal(t, name, pgErr.ConstraintName, what)
}
