package main_test

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleNeedsToken: without PGSAGA_CONSOLE_TOKEN (or with an empty one) the console does
// not start: bad usage, one line, before it touches the database.
func TestConsoleNeedsToken(t *testing.T) {
	t.Parallel()
	for _, env := range [][]string{nil, {"PGSAGA_CONSOLE_TOKEN="}, {"PGSAGA_CONSOLE_TOKEN=   "}} {
		r := pgsaga(t, append(env, "DATABASE_URL=postgres://nowhere.invalid/db"), "console", "--addr", "127.0.0.1:0")
		requireUsage(t, r, "PGSAGA_CONSOLE_TOKEN is not set")
	}
}

// TestConsoleServes: the console prints its address, answers the token as a Bearer header and
// nothing else, serves its login page and riverui, and stops cleanly on SIGTERM.
func TestConsoleServes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	p := start(t, []string{"PGSAGA_CONSOLE_TOKEN=s3cret-console-token"}, true,
		"console", "--addr", "127.0.0.1:0", "--database-url", w.db.URL, "--gateway-url", w.simURL)

	status, _, body := httpDo(t, "GET", p.url+"/keys?stuck=1", map[string]string{"Accept": "application/json"}, "")
	require.Equal(t, http.StatusUnauthorized, status, string(body))
	status, _, body = httpDo(t, "GET", p.url+"/keys?stuck=1", map[string]string{"Authorization": "Bearer s3cret-console-token"}, "")
	require.Equal(t, http.StatusOK, status, string(body))
	var list struct {
		Keys []struct{ Key, State string }
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Keys, 1)
	require.Equal(t, key, list.Keys[0].Key)

	status, _, body = httpDo(t, "POST", p.url+"/keys/t1/alice/"+key+"/resume", map[string]string{"Authorization": "Bearer s3cret-console-token"}, "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.JSONEq(t, `201`, string(mustField(t, body, "status")), "resumed through the gateway the flags name")

	status, hdr, _ := httpDo(t, "GET", p.url+"/login", map[string]string{"Accept": "text/html"}, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	status, _, _ = httpDo(t, "GET", p.url+"/river/", map[string]string{"Accept": "text/html", "Authorization": "Bearer s3cret-console-token"}, "")
	require.Equal(t, http.StatusOK, status)

	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}

func mustField(t *testing.T, body []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	return m[name]
}
