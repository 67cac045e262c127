package saga_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Tests in this file run executions in a real process that dies by SIGKILL at a chosen moment:
// no deferred call runs, no ROLLBACK is sent, the database only sees the connection drop.

// envKillProcess makes the test binary a process that runs one execution and kills itself
// (see runKillProcess); envKillDB and envKillKey say where.
const (
	envKillProcess = "PGSAGA_KILL_PROCESS"
	envKillDB      = "PGSAGA_KILL_DB"
	envKillKey     = "PGSAGA_KILL_KEY"
)

// killOps are the operations a killed process runs: "poison" dies inside its call, every time;
// "compensation" is reserve → reserve → declined call, and its process dies inside the undo of
// the phase named by $PGSAGA_KILL_UNDO, after the undo's writes and before they commit.
func killOps(role string) []*phases.Operation {
	hold := func(step string) phases.Step {
		return phases.Atomic(step, func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `INSERT INTO test_reservation (id, key, status) VALUES ($1, $2, 'held')`, run.Key()+"/"+step, run.Key())
			return err
		}).WithCompensation(func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			if _, err := tx.Exec(ctx, `UPDATE test_reservation SET status = 'released' WHERE id = $1`, run.Key()+"/"+step); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step) VALUES ($1, $2)`, run.Key(), "release:"+step); err != nil {
				return err
			}
			if role == "compensation" && os.Getenv("PGSAGA_KILL_UNDO") == step {
				killSelf()
			}
			return nil
		})
	}
	call := func(context.Context, *phases.Run) error {
		if role == "poison" {
			killSelf()
		}
		return phases.Reject(http.StatusPaymentRequired, "card_declined", "declined")
	}
	return []*phases.Operation{{Name: "killed", Steps: []phases.Step{
		hold("hold_seat"), hold("hold_meal"),
		phases.Call("charge", call),
		phases.Atomic("record", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
		}),
	}}}
}

func killSelf() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// runKillProcess is the killed process's main: one client request (or, once the key exists, a
// worker's resume) of the key, with MaxAttempts 3.
func runKillProcess(role string) int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv(envKillDB))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: killOps(role), MaxAttempts: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	key := os.Getenv(envKillKey)
	req := &saga.Request{Scope: saga.Scope{Tenant: "tenant-1", Actor: "alice"}, Key: key, Method: "POST", Path: "/test", Body: []byte(`{}`)}
	_, err = client.Run(ctx, "killed", req)
	if errors.As(err, new(*saga.ParkedError)) {
		return 4
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 5
	}
	return 0
}

// runKilled runs the test binary as a killed process of role for key and returns how it ended.
func runKilled(t *testing.T, h *harness, role, key string, env ...string) (killed bool, exitCode int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKillProcess+"="+role, envKillDB+"="+h.db.URL, envKillKey+"="+key)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal() == syscall.SIGKILL, -1
		}
		return false, exit.ExitCode()
	}
	require.NoError(t, err, string(out))
	return false, 0
}

// TestPoisonKeyKilledProcessesPark: every execution of the key kills its process (kill -9) inside
// the call. Were the claims not counting attempts, retries would take the key over forever.
// After MaxAttempts (3) killed executions, the next one parks the key without running anything.
func TestPoisonKeyKilledProcessesPark(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &saga.Config{MaxAttempts: 3}, func(*harness) []*phases.Operation { return killOps("poison") })
	key := "poison-kill-" + newID()
	for attempt := 1; attempt <= 3; attempt++ {
		killed, code := runKilled(t, h, "poison", key)
		require.True(t, killed, "attempt %d: the process was not killed (exit %d)", attempt, code)
		k := h.key(key)
		require.Equal(t, attempt, k.Attempts)
		require.Equal(t, saga.KeyStatusStarted, k.Status)
		h.expireLease(key)
	}
	killed, code := runKilled(t, h, "poison", key)
	require.False(t, killed, "the fourth execution must not reach the call")
	require.Equal(t, 4, code, "the fourth execution parks the key")
	k := h.key(key)
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, saga.ParkedAttemptsExhausted, k.ParkedReason)
	require.Len(t, k.Calls, 3, "three killed calls, each journaled before it ran")
	require.Zero(t, h.count(`SELECT count(*) FROM test_reservation WHERE status = 'released'`), "attempts running out compensates nothing")
}

// TestKilledMidCompensationUndoesOnce: a declined charge must release both reservations. The
// process is killed inside each undo in turn (after the undo's writes, before its commit), and
// each time another execution continues: every reservation is released by exactly one committed
// undo, and the decline is stored once.
func TestKilledMidCompensationUndoesOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, func(*harness) []*phases.Operation { return killOps("compensation") })
	key := "compensation-kill-" + newID()
	for _, undo := range []string{"hold_meal", "hold_seat"} {
		killed, code := runKilled(t, h, "compensation", key, "PGSAGA_KILL_UNDO="+undo)
		require.True(t, killed, "killed in the undo of %s (exit %d)", undo, code)
		k := h.key(key)
		require.Equal(t, saga.KeyStatusStarted, k.Status)
		require.Equal(t, "compensate:"+undo, k.RecoveryPoint)
		h.expireLease(key)
	}
	res, err := h.client.Run(t.Context(), "killed", h.req(key, `{}`))
	require.NoError(t, err)
	require.Equal(t, http.StatusPaymentRequired, res.Response.Status)
	require.Equal(t, 2, h.count(`SELECT count(*) FROM test_reservation WHERE key = $1 AND status = 'released'`, key))
	require.Equal(t, 1, h.effects(key, "release:hold_meal"))
	require.Equal(t, 1, h.effects(key, "release:hold_seat"))
	_, err = h.client.Resume(t.Context(), h.scope, key, &saga.ResumeOpts{Parked: true})
	require.NoError(t, err)
	require.Equal(t, 1, h.effects(key, "release:hold_meal"), "a resume of the completed key undoes nothing")
}
