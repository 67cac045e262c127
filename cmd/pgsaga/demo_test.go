package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/dbtest"
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
