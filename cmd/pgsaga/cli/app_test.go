package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m, nil) }

// lineWriter collects output and hands over the first "listening on" address.
type lineWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	addr chan string
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if m := listening.FindStringSubmatch(w.buf.String()); m != nil {
		select {
		case w.addr <- m[1]:
		default:
		}
	}
	return len(b), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// An application's own App: migrate applies its line after pgsaga's, serve runs its operation
// idempotently under its own router (chi, a route parameter as the tenant), its own flag
// reaches its Build, and cancelling the context stops serve cleanly.
func TestOwnApp(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t) // empty: no migrations in the template
	app := shopApp()
	env := func(out io.Writer) *cli.Env {
		return &cli.Env{Stdout: out, Stderr: out, Getenv: func(name string) string {
			if name == "DATABASE_URL" {
				return db.URL
			}
			return ""
		}}
	}

	var migrated strings.Builder
	require.Equal(t, cli.ExitOK, cli.Run(t.Context(), app, []string{"migrate"}, env(&migrated)), migrated.String())
	require.Contains(t, migrated.String(), "applied shop 001_receipts")
	var again strings.Builder
	require.Equal(t, cli.ExitOK, cli.Run(t.Context(), app, []string{"migrate"}, env(&again)))
	require.Equal(t, "already up to date\n", again.String())

	// The application's binary has the apikey command: one key per shop.
	secrets := map[string]string{}
	for _, shop := range []string{"s1", "s2"} {
		var created strings.Builder
		require.Equal(t, cli.ExitOK, cli.Run(t.Context(), app, []string{"apikey", "create", "--tenant", shop, "--actor", "alice", "--json"}, env(&created)), created.String())
		var k struct{ Secret string }
		require.NoError(t, json.Unmarshal([]byte(created.String()), &k))
		secrets[shop] = k.Secret
	}

	ctx, cancel := context.WithCancel(t.Context())
	out := &lineWriter{addr: make(chan string, 1)}
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, app, []string{"serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--log-level", "off",
			"--receipt-prefix", "till7_"}, env(out))
	}()
	var url string
	select {
	case url = <-out.addr:
	case code := <-done:
		t.Fatalf("serve exited with %d: %s", code, out)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not listen: %s", out)
	}

	postAs := func(secret, shop, body string) (int, string, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", url+"/shops/"+shop+"/receipts", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Idempotency-Key", "receipt-0001")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), string(b)
	}
	post := func(shop, body string) (int, string, string) { return postAs(secrets[shop], shop, body) }
	receipts := func(shop string) int {
		var n int
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM receipts WHERE tenant_id = $1`, shop).Scan(&n))
		return n
	}
	// Through chi, with the tenant from the route: a request, its replay, and the key reused
	// for another body.
	status, replayed, first := post("s1", `{}`)
	require.Equal(t, http.StatusCreated, status, first)
	require.Empty(t, replayed)
	require.Contains(t, first, `"id":"till7_`, "the app's own flag reached its Build")
	status, replayed, second := post("s1", `{}`)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "true", replayed)
	require.Equal(t, first, second)
	status, _, reused := post("s1", `{"total": 5}`)
	require.Equal(t, http.StatusUnprocessableEntity, status, reused)
	require.Contains(t, reused, "idempotency_key_reused")
	require.Equal(t, 1, receipts("s1"))
	// The route parameter scopes the key: the same key in another shop is another request.
	status, replayed, other := post("s2", `{}`)
	require.Equal(t, http.StatusCreated, status, other)
	require.Empty(t, replayed)
	require.NotEqual(t, first, other)
	require.Equal(t, 1, receipts("s2"))
	// One shop's key is not another's, and a request without a key is refused.
	status, _, body := postAs(secrets["s1"], "s2", `{}`)
	require.Equal(t, http.StatusUnauthorized, status, body)
	status, _, body = postAs("", "s1", `{}`)
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Equal(t, 1, receipts("s2"))

	cancel()
	select {
	case code := <-done:
		require.Equal(t, cli.ExitOK, code, out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
}

// An App without Build still migrates and inspects keys; the commands that need operations
// say so in one line.
func TestAppWithoutBuild(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	var out strings.Builder
	env := &cli.Env{Stdout: &out, Stderr: &out}
	require.Equal(t, cli.ExitOK, cli.Run(t.Context(), &cli.App{}, []string{"migrate", "--database-url", db.URL}, env), out.String())
	out.Reset()
	require.Equal(t, cli.ExitOK, cli.Run(t.Context(), &cli.App{}, []string{"keys", "--database-url", db.URL}, env), out.String())
	require.Equal(t, "no keys\n", out.String())
	out.Reset()
	require.Equal(t, cli.ExitFailure, cli.Run(t.Context(), &cli.App{}, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db.URL, "--log-level", "off"}, env))
	require.Equal(t, "pgsaga serve: this binary has no operations (App.Build is nil)\n", out.String())
}

// The embedded CLI carries nothing of the example: no gateway flag, no simulator, no demo.
func TestNothingOfTheExample(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--gateway-url", "http://127.0.0.1:1"}, "unknown flag: --gateway-url"},
		{[]string{"worker", "--gateway-url", "http://127.0.0.1:1"}, "unknown flag: --gateway-url"},
		{[]string{"resume", "--gateway-url", "http://127.0.0.1:1"}, "unknown flag: --gateway-url"},
		{[]string{"settle", "--gateway-url", "http://127.0.0.1:1"}, "unknown flag: --gateway-url"},
		{[]string{"gateway-sim"}, `unknown command "gateway-sim"`},
		{[]string{"demo"}, `unknown command "demo"`},
		{[]string{"demo-server"}, `unknown command "demo-server"`},
	} {
		var out strings.Builder
		code := cli.Run(t.Context(), &cli.App{}, tc.args, &cli.Env{Stdout: &out, Stderr: &out})
		require.Equal(t, cli.ExitUsage, code, out.String())
		require.Contains(t, out.String(), tc.want)
	}
}
