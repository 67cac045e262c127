package dbtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// keyInvariantsSQL names, for every row of pgsaga_key and every call journal entry
// (pgsaga_call_journal: the key rows' entries and pgsaga_call's rows) that breaks one, the
// invariants it breaks. They are the ones migration 001 enforced with CHECK constraints until
// migration 004 dropped them for their cost (the key store is the only writer), plus the call
// journal's outcome classes (its CHECK, dropped by 004 too), its tie to its key, which no
// foreign key enforces, and one entry per call attempt, which pgsaga_call's primary key enforced
// alone until migration 009 kept a key's first entry in its row. A NULL where a value is
// required counts as broken (a CHECK would have let it pass).
const keyInvariantsSQL = `SELECT 'pgsaga_key', tenant_id, actor_id, key, status, broken FROM (
	SELECT tenant_id, actor_id, key, status, array_remove(ARRAY[
		CASE WHEN NOT coalesce(length(key) BETWEEN 8 AND 255 AND length(tenant_id) BETWEEN 1 AND 64
			AND length(actor_id) BETWEEN 1 AND 64, false) THEN 'identity: a key of 8-255 characters, a tenant and an actor of 1-64' END,
		CASE WHEN NOT coalesce(attempts >= 1, false) THEN 'attempts: at least 1' END,
		CASE WHEN NOT coalesce(CASE status
			WHEN 'started' THEN lease_token IS NOT NULL AND response_status IS NULL
			WHEN 'completed' THEN response_status BETWEEN 100 AND 599 AND response_body IS NOT NULL
				AND completed_at IS NOT NULL AND expires_at IS NOT NULL AND recovery_point = 'finished'
			WHEN 'failed' THEN response_status IS NULL
			ELSE false END, false)
		THEN 'state machine: started is leased with no response; completed has its response, expiry and recovery point finished; failed has no response' END
	], NULL) AS broken
	FROM pgsaga_key) keys
WHERE cardinality(broken) > 0
UNION ALL
SELECT 'pgsaga_call_journal', tenant_id, actor_id, key, what, broken FROM (
	SELECT c.tenant_id, c.actor_id, c.key, c.step || '#' || c.attempt AS what, array_remove(ARRAY[
		CASE WHEN k.key IS NULL OR c.attempt > k.attempts OR c.attempt < 1
			THEN 'journal: a call attempt belongs to a stored key and to one of its attempts' END,
		CASE WHEN c.outcome NOT IN ('succeeded', 'declined', 'failed_before', 'pending', 'unknown')
			THEN 'journal: an outcome is one of the five classes' END,
		CASE WHEN count(*) OVER (PARTITION BY c.tenant_id, c.actor_id, c.key, c.step, c.attempt) > 1
			THEN 'journal: one entry per call attempt' END
	], NULL) AS broken
	FROM pgsaga_call_journal c LEFT JOIN pgsaga_key k USING (tenant_id, actor_id, key)) calls
WHERE cardinality(broken) > 0
ORDER BY 1, 2, 3, 4`

// KeyInvariantViolations lists every row of pgsaga_key (and every call journal entry) that
// breaks the key state machine, one line each with the invariants it breaks; empty when every row holds them.
func KeyInvariantViolations(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}) ([]string, error) {
	rows, err := q.Query(ctx, keyInvariantsSQL)
	if err != nil {
		return nil, fmt.Errorf("error checking key invariants: %w", err)
	}
	var out []string
	var table, tenant, actor, key, what string
	var broken []string
	_, err = pgx.ForEachRow(rows, []any{&table, &tenant, &actor, &key, &what, &broken}, func() error {
		out = append(out, fmt.Sprintf("%s (%s, %s, %s) %s: %s", table, tenant, actor, key, what, strings.Join(broken, "; ")))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error checking key invariants: %w", err)
	}
	return out, nil
}

// RequireKeyInvariants fails t unless every key row (and call journal entry) of db holds the key
// state machine's invariants. Heavy tests run it when they end: the database enforces none of
// them (migration 004), the key store does.
func RequireKeyInvariants(t testing.TB, db *DB) {
	t.Helper()
	broken, err := KeyInvariantViolations(context.Background(), db.Pool)
	if err != nil {
		t.Errorf("dbtest: %v", err)
		return
	}
	if len(broken) > 0 {
		t.Errorf("dbtest: %d rows break the key invariants:\n  %s", len(broken), strings.Join(broken, "\n  "))
	}
}
