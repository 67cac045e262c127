package main_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"
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

// After gc, a retry of a deleted key's request is 410 idempotency_key_expired and creates
// nothing; another body under that key is 422; --tombstone-retention bounds how long.
func TestGCLeavesTombstones(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	key := uuid.NewString()
	body := `{"amount": 700, "currency": "USD"}`
	status, first := w.post("t1", "alice", key, "/invoices", body)
	require.Equal(t, http.StatusCreated, status, string(first))

	r := pgsaga(t, nil, "gc", url, "--older-than", "0s")
	require.Equal(t, 0, r.code, r.String())
	require.Equal(t, "deleted 1 key\n", r.stdout)
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key_tombstone WHERE expires_at > now() + interval '29 days'`))

	status, again := w.post("t1", "alice", key, "/invoices", body)
	require.Equal(t, http.StatusGone, status, string(again))
	require.Equal(t, "idempotency_key_expired", jsonString(t, again, "error"))
	status, other := w.post("t1", "alice", key, "/invoices", `{"amount": 800, "currency": "USD"}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, string(other))
	require.Equal(t, 1, w.count(`SELECT count(*) FROM invoices`), "no invoice was created again")

	// A tombstone window shorter than the key's age leaves none: the key is new again.
	second := uuid.NewString()
	status, _ = w.post("t1", "alice", second, "/invoices", body)
	require.Equal(t, http.StatusCreated, status)
	w.exec(`UPDATE pgsaga_key SET completed_at = now() - interval '2 hours'`)
	r = pgsaga(t, nil, "gc", url, "--older-than", "1h", "--tombstone-retention", "1h", "--json")
	require.Equal(t, 0, r.code, r.String())
	require.JSONEq(t, `{"deleted": 1}`, r.stdout)
	require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_key_tombstone WHERE key_hash = pgsaga_key_hash($1)`, second))

	requireUsage(t, pgsaga(t, nil, "gc", url, "--tombstone-retention", "0s"), "--tombstone-retention")
	requireUsage(t, pgsaga(t, nil, "gc", url, "--tombstone-retention", "-1h"), "--tombstone-retention")
}
