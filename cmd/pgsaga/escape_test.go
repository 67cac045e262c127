package main_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A stored request path, last error, history note or tenant may carry control characters (an
// ESC that would recolour or clear the operator's terminal): every human output shows them
// escaped, \x1b, and never writes the byte itself. JSON output carries them as JSON escapes.
func TestHumanOutputEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const esc = "\x1b[2J\x1b[31m"

	// The path comes from the request: an order id of ESC [2J ESC [31m, percent-encoded.
	pathKey := uuid.NewString()
	status, body := w.post("t1", "alice", pathKey, "/orders/%1B%5B2J%1B%5B31m/complete", `{}`)
	require.Equal(t, http.StatusNotFound, status, string(body))
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND path = $2`, pathKey, "/orders/"+esc+"/complete"))

	// A last error, a history note and a tenant carrying ESC (through an API key's tenant).
	stuck, _ := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET last_error = 'gateway said: ' || $2 || 'boom' || chr(13) || 'rewritten' WHERE key = $1`, stuck, esc)
	w.exec(`INSERT INTO pgsaga_key_action (tenant_id, actor_id, key, at, by, action, note)
		SELECT tenant_id, actor_id, key, now(), 'ops' || $2, 'resume', 'note ' || $2 FROM pgsaga_key WHERE key = $1`, stuck, esc)
	evil := apiKey(t, w.db.URL, "t"+esc, "alice")
	require.Equal(t, "t"+esc, evil.Tenant)

	runs := map[string]result{
		"show path":  pgsaga(t, nil, "show", "--tenant", "t1", "--actor", "alice", "--database-url", w.db.URL, pathKey),
		"show stuck": pgsaga(t, nil, "show", "--tenant", "t1", "--actor", "alice", "--database-url", w.db.URL, stuck),
		"keys":       pgsaga(t, nil, "keys", "--database-url", w.db.URL),
		"stuck keys": pgsaga(t, nil, "keys", "--stuck", "--database-url", w.db.URL),
		"apikeys":    pgsaga(t, nil, "apikey", "list", "--database-url", w.db.URL),
		"revoke":     pgsaga(t, nil, "apikey", "revoke", evil.ID, "--database-url", w.db.URL),
		"no such key": pgsaga(t, nil, "show", "--tenant", "t"+esc, "--actor", "alice", "--database-url", w.db.URL,
			"key-0000-"+uuid.NewString()),
	}
	for name, r := range runs {
		require.NotContains(t, r.stdout+r.stderr, "\x1b", "%s wrote an ESC: %q", name, r.stdout+r.stderr)
		require.NotContains(t, r.stdout+r.stderr, "\r", "%s wrote a CR: %q", name, r.stdout+r.stderr)
	}
	require.Regexp(t, `(?m)^request +POST /orders/\\x1b\[2J\\x1b\[31m/complete$`, runs["show path"].stdout)
	require.Contains(t, runs["show stuck"].stdout, `gateway said: \x1b[2J\x1b[31mboom\rrewritten`)
	require.Contains(t, runs["show stuck"].stdout, `by ops\x1b[2J\x1b[31m`)
	require.Contains(t, runs["stuck keys"].stdout, `gateway said: \x1b[2J\x1b[31mboom\rre`)
	require.Contains(t, runs["apikeys"].stdout, `t\x1b[2J\x1b[31m`)
	require.Contains(t, runs["revoke"].stdout, `tenant t\x1b[2J\x1b[31m`)
	require.Equal(t, 1, runs["no such key"].code, runs["no such key"].String())
	require.Contains(t, runs["no such key"].stderr, `tenant t\x1b[2J\x1b[31m`)

	// JSON keeps the value, escaped the JSON way.
	r := pgsaga(t, nil, "show", "--json", "--tenant", "t1", "--actor", "alice", "--database-url", w.db.URL, stuck)
	require.Equal(t, 0, r.code, r.String())
	require.NotContains(t, r.stdout, "\x1b")
	require.Contains(t, r.stdout, `"last_error":"gateway said: \u001b[2J\u001b[31mboom\rrewritten"`)
	require.False(t, strings.Contains(r.stdout, `\x1b`), "JSON is not escaped twice")
}
