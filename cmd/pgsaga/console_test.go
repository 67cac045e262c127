package main_test

import (
	"encoding/json"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// consoleToken is PGSAGA_CONSOLE_TOKEN in these tests: 32 bytes and more.
const consoleToken = "s3cret-console-token-0123456789abcdef"

// TestConsoleNeedsAnOperator: the console does not start (bad usage, one line) when nobody
// could sign in (no operator in the database and no PGSAGA_CONSOLE_TOKEN, an empty one counting
// as none), with a token shorter than 32 bytes, with --insecure-http on an address that is not
// a loopback one, or when PGSAGA_CONSOLE_OPERATOR names an operator of the database.
func TestConsoleNeedsAnOperator(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	for _, env := range [][]string{nil, {"PGSAGA_CONSOLE_TOKEN="}, {"PGSAGA_CONSOLE_TOKEN=   "}} {
		r := pgsaga(t, append(env, "DATABASE_URL="+db.URL), "console", "--addr", "127.0.0.1:0")
		requireUsage(t, r, "no operator can sign in: add one with `pgsaga operator add NAME`, or set PGSAGA_CONSOLE_TOKEN")
	}
	requireUsage(t, pgsaga(t, []string{"PGSAGA_CONSOLE_TOKEN=short-token-of-31-bytes-0123456", "DATABASE_URL=postgres://nowhere.invalid/db"},
		"console", "--addr", "127.0.0.1:0"), "PGSAGA_CONSOLE_TOKEN must be at least 32 bytes (got 31)")
	for _, addr := range []string{"0.0.0.0:8081", ":8081", "[::]:0"} {
		requireUsage(t, pgsaga(t, []string{"PGSAGA_CONSOLE_TOKEN=" + consoleToken, "DATABASE_URL=postgres://nowhere.invalid/db"},
			"console", "--insecure-http", "--addr", addr), "--insecure-http is allowed only with a loopback --addr")
	}
	r := pgsaga(t, nil, "operator", "add", "admin", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	requireUsage(t, pgsaga(t, []string{"PGSAGA_CONSOLE_TOKEN=" + consoleToken, "DATABASE_URL=" + db.URL}, "console", "--addr", "127.0.0.1:0"),
		`PGSAGA_CONSOLE_OPERATOR names "admin", an operator in the database`)
}

// TestConsoleServes: the console prints its address, answers an operator's token as a Bearer
// header and nothing else, records what they do under their name, serves its login page and
// riverui, serves /metrics and /healthz on --ops-addr only, and stops cleanly on SIGTERM.
func TestConsoleServes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	r := pgsaga(t, nil, "operator", "add", "ana", "--json", "--database-url", w.db.URL)
	require.Equal(t, 0, r.code, r.String())
	ana := string(mustField(t, []byte(r.stdout), "token"))
	ana = ana[1 : len(ana)-1]
	p := start(t, []string{"PGSAGA_CONSOLE_TOKEN=" + consoleToken, "PGSAGA_CONSOLE_OPERATOR=night-shift"}, true,
		"console", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--database-url", w.db.URL, "--gateway-url", w.simURL)
	require.NotEmpty(t, p.ops)

	status, _, body := httpDo(t, "GET", p.url+"/keys?stuck=1", map[string]string{"Accept": "application/json"}, "")
	require.Equal(t, http.StatusUnauthorized, status, string(body))
	for _, tok := range []string{consoleToken, ana} {
		status, _, body = httpDo(t, "GET", p.url+"/keys?stuck=1", map[string]string{"Authorization": "Bearer " + tok}, "")
		require.Equal(t, http.StatusOK, status, string(body))
		var list struct {
			Keys []struct{ Key, State string }
		}
		require.NoError(t, json.Unmarshal(body, &list))
		require.Len(t, list.Keys, 1)
		require.Equal(t, key, list.Keys[0].Key)
	}

	status, _, body = httpDo(t, "POST", p.url+"/keys/t1/alice/"+key+"/resume", map[string]string{"Authorization": "Bearer " + ana}, "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.JSONEq(t, `201`, string(mustField(t, body, "status")), "resumed through the gateway the flags name")
	r = pgsaga(t, nil, "show", "--tenant", "t1", "--actor", "alice", "--json", "--database-url", w.db.URL, key)
	require.Equal(t, 0, r.code, r.String())
	require.Contains(t, r.stdout, `"by":"ana","action":"resume"`, "recorded under the operator's name")

	status, hdr, _ := httpDo(t, "GET", p.url+"/login", map[string]string{"Accept": "text/html"}, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	status, _, _ = httpDo(t, "GET", p.url+"/river/", map[string]string{"Accept": "text/html", "Authorization": "Bearer " + consoleToken}, "")
	require.Equal(t, http.StatusOK, status)

	status, _, body = httpDo(t, "GET", p.ops+"/metrics", nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `pgsaga_keys{state="completed"}`)
	status, _, body = httpDo(t, "GET", p.ops+"/healthz", nil, "")
	require.Equal(t, http.StatusOK, status, string(body))
	for _, path := range []string{"/metrics", "/healthz"} {
		status, _, _ = httpDo(t, "GET", p.url+path, map[string]string{"Authorization": "Bearer " + consoleToken}, "")
		require.Equal(t, http.StatusNotFound, status, "%s is not served on the console's address", path)
	}

	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}

// TestConsoleRevokeEndsSession: `operator revoke`, run while an operator is signed in, ends
// their session in the running console at once; the cookie is __Host- prefixed and Secure.
func TestConsoleRevokeEndsSession(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	r := pgsaga(t, nil, "operator", "add", "ben", "--json", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	var ben struct{ Token string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ben))
	p := start(t, nil, true, "console", "--addr", "127.0.0.1:0", "--database-url", db.URL)

	status, hdr, body := httpDo(t, "POST", p.url+"/login",
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "token="+ben.Token)
	require.Equal(t, http.StatusOK, status, string(body))
	cookies := (&http.Response{Header: hdr}).Cookies()
	require.Len(t, cookies, 1)
	ck := cookies[0]
	require.Equal(t, "__Host-pgsaga_console", ck.Name)
	require.True(t, ck.Secure)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	session := map[string]string{"Cookie": ck.Name + "=" + ck.Value}
	status, _, _ = httpDo(t, "GET", p.url+"/", session, "")
	require.Equal(t, http.StatusOK, status)

	r = pgsaga(t, nil, "operator", "revoke", "ben", "--database-url", db.URL)
	require.Equal(t, 0, r.code, r.String())
	status, _, _ = httpDo(t, "GET", p.url+"/", session, "")
	require.Equal(t, http.StatusUnauthorized, status, "the session ended with the revoke")
	require.Equal(t, 0, p.stop(syscall.SIGTERM), p.stderr.String())
}

func mustField(t *testing.T, body []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	return m[name]
}
