package keystore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// TestPredicatesAreInlined: the predicates of migration 012 cost what their expressions cost
// only while PostgreSQL inlines them; a function it calls instead runs once per row and hides
// the expression from the planner. Each statement that uses one is planned here, and its plan
// must name none of them.
func TestPredicatesAreInlined(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	conn, err := db.Pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	// A generic plan, as a prepared statement gets after its first executions: the parameters
	// are unknown, so nothing but inlining can remove a call.
	_, err = conn.Exec(t.Context(), "SET plan_cache_mode = force_generic_plan")
	require.NoError(t, err)
	defer func() { _, _ = conn.Exec(t.Context(), "RESET plan_cache_mode") }()
	plan := func(sql string) string {
		_, err := conn.Exec(t.Context(), "PREPARE planned AS "+sql)
		require.NoError(t, err)
		defer func() { _, _ = conn.Exec(t.Context(), "DEALLOCATE planned") }()
		rows, err := conn.Query(t.Context(), "EXPLAIN (VERBOSE) EXECUTE planned"+params(sql))
		require.NoError(t, err)
		var b strings.Builder
		for rows.Next() {
			var line string
			require.NoError(t, rows.Scan(&line))
			b.WriteString(line + "\n")
		}
		require.NoError(t, rows.Err())
		return b.String()
	}
	// The control: a function PostgreSQL cannot inline (plpgsql) is named in the plan.
	require.Contains(t, plan(claimStarted), "pgsaga_key_expired")
	for name, sql := range map[string]string{
		"ClaimDue":     claimDue,
		"ClaimKeys":    claimKeys,
		"ReserveDue":   reserveDue,
		"TakeOver":     takeOver,
		"ListKeys":     listKeys,
		"CountKeys":    countKeys,
		"OldestStuck":  oldestStuck,
		"EstimateKeys": estimateKeys,
	} {
		p := plan(sql)
		for _, f := range []string{"pgsaga_lease_expired", "pgsaga_key_due", "pgsaga_key_stuck", "pgsaga_budget_left"} {
			require.NotContains(t, p, f, "%s calls %s instead of inlining it:\n%s", name, f, p)
		}
	}
}

// params is a generic plan's arguments for sql: as many NULLs as it has parameters.
func params(sql string) string {
	n := 0
	for i := 1; strings.Contains(sql, "$"+itoa(i)); i++ {
		n = i
	}
	if n == 0 {
		return ""
	}
	return "(" + strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ") + ")"
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
