package main_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGC(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	for range 5 {
		w.invoice("t1", 100) // five completed keys, kept 24h
	}
	stuck, _ := w.stuckPayment("t1", "alice") // one more completed (its invoice) and one started
	parked, _ := w.stuckPayment("t1", "bob")
	w.exec(`UPDATE pgsaga_key SET status = 'failed' WHERE key = $1`, parked)
	// Old enough for every window: everything, whatever its state.
	w.exec(`UPDATE pgsaga_key SET created_at = now() - interval '3 days', completed_at = now() - interval '3 days' WHERE status = 'completed'`)
	w.exec(`UPDATE pgsaga_key SET created_at = now() - interval '3 days', updated_at = now() - interval '3 days' WHERE status <> 'completed'`)
	// Two completed keys are past their own window.
	w.exec(`UPDATE pgsaga_key SET expires_at = now() - interval '1 minute'
		WHERE key IN (SELECT key FROM pgsaga_key WHERE status = 'completed' ORDER BY key LIMIT 2)`)
	total := w.count(`SELECT count(*) FROM pgsaga_key`)
	require.Equal(t, 9, total)

	r := pgsaga(t, nil, "gc", url, "--dry-run")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "would delete 2 keys\n", r.stdout)
	require.Equal(t, total, w.count(`SELECT count(*) FROM pgsaga_key`))

	r = pgsaga(t, nil, "gc", url, "--dry-run", "--older-than", "48h")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "would delete 7 keys\n", r.stdout)

	r = pgsaga(t, nil, "gc", url)
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "deleted 2 keys\n", r.stdout)
	require.Equal(t, total-2, w.count(`SELECT count(*) FROM pgsaga_key`))

	r = pgsaga(t, nil, "gc", url, "--older-than", "48h", "--json")
	require.Equal(t, 0, r.code, r.String())
	var doc map[string]int
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &doc))
	require.Equal(t, map[string]int{"deleted": 5}, doc)

	// Started and failed keys are never deleted.
	require.Equal(t, 2, w.count(`SELECT count(*) FROM pgsaga_key`))
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'started'`, stuck))
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'failed'`, parked))

	r = pgsaga(t, nil, "gc", url, "--json")
	require.Equal(t, 0, r.code, r.String())
	require.JSONEq(t, `{"deleted": 0}`, r.stdout)

	requireUsage(t, pgsaga(t, nil, "gc", url, "--older-than", "-1h"), "--older-than")
	requireUsage(t, pgsaga(t, nil, "gc", url, "--older-than", "yesterday"), "--older-than")
}

// An explicit --older-than 0s means every completed key, also those completed a moment ago
// whose own window has a day to run; started and failed keys stay.
func TestGCOlderThanZero(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	for range 3 {
		w.invoice("t1", 100)
	}
	stuck, _ := w.stuckPayment("t1", "alice") // its invoice is a fourth completed key
	require.Equal(t, 4, w.count(`SELECT count(*) FROM pgsaga_key WHERE status = 'completed' AND expires_at > now() + interval '1 hour'`))

	r := pgsaga(t, nil, "gc", url, "--dry-run")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "would delete 0 keys\n", r.stdout, "without --older-than each key keeps its own window")

	r = pgsaga(t, nil, "gc", url, "--older-than", "0s", "--dry-run")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "would delete 4 keys\n", r.stdout)

	r = pgsaga(t, nil, "gc", url, "--older-than", "0s", "--json")
	require.Equal(t, 0, r.code, r.String())
	require.JSONEq(t, `{"deleted": 4}`, r.stdout)
	require.Empty(t, r.stderr, "no progress bar when stderr is not a terminal")
	require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`))
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'started'`, stuck))
}
