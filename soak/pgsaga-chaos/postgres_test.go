package main

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// TestPausePostgres checks that the database pause is what the soak claims: every process of the
// cluster (postmaster, backends, auxiliaries) stopped, a statement waiting, and all of it going
// on after the thaw.
func TestPausePostgres(t *testing.T) {
	t.Parallel()
	c, err := pglocal.Start(t.Context(), &pglocal.Config{Launch: pglocal.Launch{StartTimeout: 2 * time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	e := &env{single: c}
	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(t.Context()) })
	var backend int
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&backend))
	postmaster, err := e.postmasterPID()
	require.NoError(t, err)

	require.NoError(t, e.freezePostgres())
	t.Cleanup(e.resumePostgres)
	procs := append(descendants(postmaster), postmaster)
	require.Contains(t, procs, backend)
	require.Greater(t, len(procs), 3, "the postmaster, the backend and the auxiliary processes")
	running := func() map[int]string {
		out := map[int]string{}
		for _, pid := range procs {
			if st, ok := readProcStat(pid); ok && !st.stoppedOrDead() {
				out[pid] = st.state
			}
		}
		return out
	}
	if !assert.Eventually(t, func() bool { return len(running()) == 0 }, 10*time.Second, 10*time.Millisecond) {
		t.Fatalf("not every process of the cluster stopped; still running (pid: state): %v", running())
	}

	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(t.Context(), `SELECT 1`)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a statement was answered while the cluster was paused (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, e.thawPostgres())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the statement was not answered after the thaw")
	}
}
