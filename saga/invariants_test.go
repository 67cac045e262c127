package saga_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// TestKeyInvariantsCheckFindsEveryBrokenRow: the database no longer refuses rows that break the
// key state machine (migration 004 dropped its CHECKs, a sixth of PostgreSQL's CPU on every
// write; the key store is the only writer). The invariants are asserted instead over every row
// when the engine's heavy tests end (dbtest.RequireKeyInvariants, see newHarness). This test
// writes each kind of row the CHECKs refused, directly, as a buggy writer would, and checks that
// the assertion names each one with the invariant it breaks — and none of the valid rows.
func TestKeyInvariantsCheckFindsEveryBrokenRow(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	insert := `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash,
		request_body, status, recovery_point, lease_token, response_status, response_body, completed_at, expires_at, attempts)
		VALUES ($1, 'a', $2, 'op', 'POST', '/x', '\x00', '', $3, $4, $5, $6, $7, $8, $8, $9)`
	const lease = "5b0a4c4e-8f1e-4c55-9f5b-0d6f3d4c2a11"
	const at = "2026-01-01T00:00:00Z"
	for _, tc := range []struct {
		name, tenant, key, status, rp string
		lease, respStatus, body, done any
		attempts                      int
		broken                        string // "" for a valid row
	}{
		{"started", "t", "valid-00001", "started", "reserve", lease, nil, nil, nil, 1, ""},
		{"completed", "t", "valid-00002", "completed", "finished", nil, 201, "{}", at, 2, ""},
		{"failed", "t", "valid-00003", "failed", "reserve", lease, nil, nil, nil, 3, ""},
		{"started at its first call", "t", "valid-00004", "started", "created", lease, nil, nil, nil, 1, ""},
		{"started without a lease", "t", "key-00001", "started", "started", nil, nil, nil, nil, 1, "state machine"},
		{"started with a response", "t", "key-00002", "started", "started", lease, 200, "{}", nil, 1, "state machine"},
		{"completed without a response", "t", "key-00003", "completed", "finished", lease, nil, nil, at, 1, "state machine"},
		{"completed with a status and no body", "t", "key-00009", "completed", "finished", lease, 200, nil, at, 1, "state machine"},
		{"completed without its expiry", "t", "key-00010", "completed", "finished", lease, 200, "{}", nil, 1, "state machine"},
		{"completed before its last phase", "t", "key-00004", "completed", "charged", lease, 200, "{}", at, 1, "state machine"},
		{"completed with a status that is not HTTP", "t", "key-00005", "completed", "finished", lease, 700, "{}", at, 1, "state machine"},
		{"unknown status", "t", "key-00006", "paused", "started", lease, nil, nil, nil, 1, "state machine"},
		{"failed with a response", "t", "key-00007", "failed", "started", lease, 200, "{}", nil, 1, "state machine"},
		{"no attempt", "t", "key-00011", "started", "started", lease, nil, nil, nil, 0, "attempts"},
		{"short key", "t", "k", "started", "started", lease, nil, nil, nil, 1, "identity"},
		{"long key", "t", strings.Repeat("k", 256), "started", "started", lease, nil, nil, nil, 1, "identity"},
		{"empty tenant", "", "key-00008", "started", "started", lease, nil, nil, nil, 1, "identity"},
		{"long tenant", strings.Repeat("t", 65), "key-00012", "started", "started", lease, nil, nil, nil, 1, "identity"},
	} {
		var body any
		if tc.body != nil {
			body = []byte(tc.body.(string))
		}
		_, err := db.Pool.Exec(t.Context(), insert, tc.tenant, tc.key, tc.status, tc.rp, tc.lease, tc.respStatus, body, tc.done, tc.attempts)
		require.NoError(t, err, "%s: the database takes any row now", tc.name)
	}
	// The call journal belongs to its key and to one of its attempts (no foreign key says so).
	_, err := db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, started_at, deadline)
		VALUES ('t', 'a', 'valid-00001', 'charge', 1, now(), now()),
		       ('t', 'a', 'gone-000001', 'charge', 1, now(), now()),
		       ('t', 'a', 'valid-00001', 'charge', 2, now(), now())`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, started_at, deadline, outcome)
		VALUES ('t', 'a', 'valid-00003', 'charge', 1, now(), now(), 'succeeded'),
		       ('t', 'a', 'valid-00003', 'refund', 1, now(), now(), 'maybe')`)
	require.NoError(t, err)
	// A key's first entry lives in its row (migration 009): valid, and a second entry for the same
	// attempt, in pgsaga_call, is not.
	_, err = db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET call_step = 'charge', call_started_at = now(), call_deadline = now()
		WHERE key IN ('valid-00002', 'valid-00004')`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, started_at, deadline)
		VALUES ('t', 'a', 'valid-00002', 'charge', 2, now(), now()), ('t', 'a', 'valid-00004', 'charge', 1, now(), now())`)
	require.NoError(t, err)

	broken, err := dbtest.KeyInvariantViolations(t.Context(), db.Pool)
	require.NoError(t, err)
	want := map[string]string{} // row → the invariant it breaks
	for _, tc := range []struct{ tenant, key, rule string }{
		{"t", "key-00001", "state machine"}, {"t", "key-00002", "state machine"}, {"t", "key-00003", "state machine"},
		{"t", "key-00009", "state machine"}, {"t", "key-00010", "state machine"}, {"t", "key-00004", "state machine"},
		{"t", "key-00005", "state machine"}, {"t", "key-00006", "state machine"}, {"t", "key-00007", "state machine"},
		{"t", "key-00011", "attempts"}, {"t", "k", "identity"}, {"t", strings.Repeat("k", 256), "identity"},
		{"", "key-00008", "identity"}, {strings.Repeat("t", 65), "key-00012", "identity"},
	} {
		want["pgsaga_key ("+tc.tenant+", a, "+tc.key+")"] = tc.rule + ":"
	}
	want["pgsaga_call_journal (t, a, gone-000001)"] = "journal: a call attempt"
	want["pgsaga_call_journal (t, a, valid-00001)"] = "journal: a call attempt" // attempt 2 of a key at its first attempt
	want["pgsaga_call_journal (t, a, valid-00003)"] = "journal: an outcome"
	want["pgsaga_call_journal (t, a, valid-00004)"] = "journal: one entry per call attempt"
	got := map[string]string{}
	for _, line := range broken {
		row, rest, ok := strings.Cut(line, ") ")
		require.True(t, ok, line)
		got[row+")"] = rest
	}
	require.Len(t, got, len(want), "every broken row once, no valid one:\n%s", strings.Join(broken, "\n"))
	for row, rule := range want {
		require.Contains(t, got, row)
		require.Contains(t, got[row], rule, row)
	}
}
