package main_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

var scenarios = []string{"double click", "lost response", "crash between phases", "ten concurrent duplicates",
	"same key, different body", "another actor's key", "unknowable, then settled"}

func requireDemoPassed(t *testing.T, r result) {
	t.Helper()
	require.Equal(t, 0, r.code, r.String())
	for _, name := range scenarios {
		var row string
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, name+"  ") {
				row = l
			}
		}
		require.NotEmpty(t, row, "no row for %q:\n%s", name, r.stdout)
		require.Contains(t, row, "ok:", row)
	}
	require.Contains(t, r.stdout, "all 7 scenarios passed")
	require.NotContains(t, r.stdout, "FAIL")
}

func TestDemoWithDatabaseURL(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	// An empty database: the demo migrates it itself.
	_, err := db.Pool.Exec(t.Context(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	require.NoError(t, err)
	first := pgsaga(t, []string{"DATABASE_URL=" + db.URL}, "demo")
	requireDemoPassed(t, first)
	// Again on the same database: fresh tenants, no collision.
	second := pgsaga(t, nil, "demo", "--database-url", db.URL)
	requireDemoPassed(t, second)
	var tenants int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT tenant_id) FROM payments`).Scan(&tenants))
	require.Equal(t, 2, tenants)
	requireNoDemoServer(t, first)
	requireNoDemoServer(t, second)
}

// The demo's scenarios through PgBouncer in transaction pooling mode: the service, the crashed
// server's child process and the resumer all reach the database through the pooler (the
// database is migrated already: migrations need a session, and on an up-to-date database the
// demo's migrate only reads).
func TestDemoThroughPgBouncer(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	r := pgsaga(t, nil, "demo", "--database-pooling", "transaction", "--database-url", db.PooledURL(t))
	requireDemoPassed(t, r)
	requireNoDemoServer(t, r)
}

func TestDemoWithThrowawayPostgres(t *testing.T) {
	t.Parallel()
	r, pid := pgsagaWithPid(t, nil, "demo")
	requireDemoPassed(t, r)
	require.Contains(t, r.stdout, "starting a throwaway PostgreSQL")
	// Its cluster directory is gone, and so is every process it started.
	for _, base := range []string{"/dev/shm", os.TempDir()} {
		left, _ := filepath.Glob(filepath.Join(base, "pgsaga-pg-"+strconv.Itoa(pid)+"-*"))
		require.Empty(t, left, "the demo left its cluster directory behind")
	}
	for _, cmdline := range processes() {
		require.NotContains(t, cmdline, "pgsaga-pg-"+strconv.Itoa(pid)+"-", "the demo left a postgres process behind")
	}
	requireNoDemoServer(t, r)
}

func TestDemoWithoutPostgres(t *testing.T) {
	t.Parallel()
	r := pgsaga(t, nil, "demo", "--pg-bin-dir", t.TempDir())
	requireFailure(t, r, "set DATABASE_URL")
	require.Contains(t, r.stderr, "pgsaga demo: no PostgreSQL could be started")
}

// requireNoDemoServer checks that the demo run r left behind no serve process of its crash
// scenario. Demos run in parallel tests, so it looks for r's own: the one given r's gateway
// simulator URL, which the demo prints and no other run shares (each listens on a free port).
func requireNoDemoServer(t *testing.T, r result) {
	t.Helper()
	m := regexp.MustCompile(`gateway simulator on (http://\S+)`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, "the demo prints its gateway simulator's URL:\n%s", r.stdout)
	for _, cmdline := range processes() {
		if strings.HasPrefix(cmdline, binary+" serve ") {
			require.NotContains(t, cmdline, "--gateway-url "+m[1], "the demo's server process is left behind")
		}
	}
}

// processes are the command lines of the running processes (arguments joined by spaces).
func processes() []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
	}
	return out
}

// TestDemoServesTheConsole: with --console, the demo ends by serving the operator console on its
// data, with a token it prints, until SIGINT; then it leaves nothing behind.
func TestDemoServesTheConsole(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	cmd := exec.Command(binary, "demo", "--database-url", db.URL, "--console", "127.0.0.1:0")
	cmd.Env = baseEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line := regexp.MustCompile(`operator console on (http://\S+) \(log in with the token (\S+)\); the demo's tenant is (\S+)\.`)
	simLine := regexp.MustCompile(`gateway simulator on (http://\S+)`)
	found := make(chan []string, 1)
	simURL := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := line.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
			if m := simLine.FindStringSubmatch(sc.Text()); m != nil {
				simURL <- m[1]
			}
		}
	}()
	var m []string
	select {
	case m = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatal("the demo never printed the console's address")
	}
	status, _, body := httpDo(t, "GET", m[1]+"/keys?tenant="+m[3]+"&stuck=1", map[string]string{
		"Authorization": "Bearer " + m[2], "Accept": "application/json"}, "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.Contains(t, string(body), `"next_cursor":null`)
	status, _, _ = httpDo(t, "GET", m[1]+"/", map[string]string{"Accept": "application/json"}, "")
	require.Equal(t, http.StatusUnauthorized, status, "the console needs the token")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "the demo exits 0 after SIGINT")
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not stop on SIGINT")
	}
	sim := <-simURL
	for _, cmdline := range processes() {
		require.False(t, strings.HasPrefix(cmdline, binary+" console ") && strings.Contains(cmdline, "--gateway-url "+sim),
			"the demo left its console behind: %s", cmdline)
	}
}
