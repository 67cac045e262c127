package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/dbtest"
)

var scenarios = []string{"double click", "lost response", "crash between phases", "ten concurrent duplicates",
	"same key, different body", "another actor's key"}

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
	require.Contains(t, r.stdout, "all 6 scenarios passed")
	require.NotContains(t, r.stdout, "FAIL")
}

func TestDemoWithDatabaseURL(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	// An empty database: the demo migrates it itself.
	_, err := db.Pool.Exec(t.Context(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`)
	require.NoError(t, err)
	requireDemoPassed(t, pgsaga(t, []string{"DATABASE_URL=" + db.URL}, "demo"))
	// Again on the same database: fresh tenants, no collision.
	requireDemoPassed(t, pgsaga(t, nil, "demo", "--database-url", db.URL))
	var tenants int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(DISTINCT tenant_id) FROM payments`).Scan(&tenants))
	require.Equal(t, 2, tenants)
	requireNoDemoServer(t)
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
	requireNoDemoServer(t)
}

func TestDemoWithoutPostgres(t *testing.T) {
	t.Parallel()
	r := pgsaga(t, nil, "demo", "--pg-bin-dir", t.TempDir())
	requireFailure(t, r, "set DATABASE_URL")
	require.Contains(t, r.stderr, "pgsaga demo: no PostgreSQL could be started")
}

// requireNoDemoServer checks that no demo-server process of this test binary's pgsaga is left.
func requireNoDemoServer(t *testing.T) {
	t.Helper()
	for _, cmdline := range processes() {
		if strings.HasPrefix(cmdline, binary+" ") {
			require.NotContains(t, cmdline, "demo-server", "a demo-server process is left behind")
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
