package saga_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

const opFiveSteps = "five_steps"

// fiveSteps is three atomic phases with a call between each two: reserve → notify → confirm →
// ship → finish. Each atomic phase records its effect in test_effect; each call acts on the
// outside system under the derived key <idempotency key>/<step> and saves its receipt, which the
// later phases require (a receipt lost by the engine fails the operation permanently).
func fiveSteps(h *harness) []*phases.Operation {
	record := func(step string, needs ...string) phases.AtomicFunc {
		return func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			detail := ""
			for _, n := range needs {
				receipt, err := phases.Value[string](n).Get(run)
				if err != nil {
					return phases.Permanent(fmt.Errorf("phase %s: no receipt from %s: %w", step, n, err))
				}
				detail += n + "=" + receipt + " "
			}
			_, err := tx.Exec(ctx, `INSERT INTO test_effect (key, step, detail) VALUES ($1, $2, $3)`, run.Key(), step, detail)
			return err
		}
	}
	call := func(step string) phases.CallFunc {
		return func(ctx context.Context, run *phases.Run) error {
			return phases.Value[string](step).Set(run, h.ext.apply(run.Key()+"/"+step, mayHaveReached(run)))
		}
	}
	finish := record("finish", "notify", "ship")
	return []*phases.Operation{{
		Name: opFiveSteps,
		Steps: []phases.Step{
			phases.Atomic("reserve", record("reserve")),
			phases.Call("notify", call("notify")),
			phases.Atomic("confirm", record("confirm", "notify")),
			phases.Call("ship", call("ship")),
			phases.Atomic("finish", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if err := finish(ctx, tx, run); err != nil {
					return err
				}
				notify, _ := phases.Value[string]("notify").Get(run)
				ship, _ := phases.Value[string]("ship").Get(run)
				return run.Respond(http.StatusCreated, map[string]string{"notify": notify, "ship": ship})
			}),
		},
	}}
}

// TestCrashAtEveryRecoveryPoint kills an execution of a five-step operation at each boundary
// (the goroutine ends where it stands, as in a kill -9; its open transaction is lost with its
// connection and the server aborts it), then lets the lease expire and continues the key, by a
// client retry or by Resume. Every atomic effect must be committed exactly once, every call must
// have acted exactly once, the engine must re-send a call only when the crash came after the
// call and before the next phase committed, and the final answer must then replay byte for byte.
func TestCrashAtEveryRecoveryPoint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		crash string // the point where the first execution dies; "" = it finishes, the answer is lost
		// rp is the key's recovery point after the crash; "" = no key was stored.
		rp string
		// notify and ship are how many requests each call gets in total.
		notify, ship int
	}{
		{"reserve done, not committed", chaos.AfterStep(opFiveSteps, "reserve"), "", 1, 1},
		{"reserve committed", chaos.BeforeStep(opFiveSteps, "notify"), "reserve", 1, 1},
		{"notify acted, answer lost", chaos.AfterStep(opFiveSteps, "notify"), "reserve", 2, 1},
		{"notify done, confirm not begun", chaos.BeforeStep(opFiveSteps, "confirm"), "reserve", 2, 1},
		{"confirm done, not committed", chaos.AfterStep(opFiveSteps, "confirm"), "reserve", 2, 1},
		{"confirm committed", chaos.BeforeStep(opFiveSteps, "ship"), "confirm", 1, 1},
		{"ship acted, answer lost", chaos.AfterStep(opFiveSteps, "ship"), "confirm", 1, 2},
		{"ship done, finish not begun", chaos.BeforeStep(opFiveSteps, "finish"), "confirm", 1, 2},
		{"finish done, not committed", chaos.AfterStep(opFiveSteps, "finish"), "confirm", 1, 2},
		{"finished, answer lost", "", "finished", 1, 1},
	}
	for _, how := range []string{"client retry", "resume"} {
		for _, tc := range cases {
			if how == "resume" && tc.rp == "" {
				continue // nothing stored: there is nothing to resume, only a fresh retry
			}
			t.Run(how+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, nil, fiveSteps)
				key := "crash-" + newID()
				if tc.crash != "" {
					h.points.Crash(tc.crash)
				}
				crashed := crash.Run(func() { _, _ = h.client.Run(t.Context(), opFiveSteps, h.req(key, `{"n": 1}`)) })
				require.Equal(t, tc.crash != "", crashed, "the first execution should die at %q", tc.crash)
				require.Empty(t, h.points.Pending())

				k := h.key(key)
				if tc.rp == "" {
					require.Nil(t, k, "a crash before the first commit stores nothing")
					require.Zero(t, h.count(`SELECT count(*) FROM test_effect WHERE key = $1`, key))
				} else {
					require.NotNil(t, k)
					require.Equal(t, tc.rp, k.RecoveryPoint)
					if tc.rp != "finished" {
						require.Equal(t, saga.KeyStatusStarted, k.Status)
						require.True(t, k.Leased, "the dead execution's lease is still live")
						// While the lease is live, a retry is told to wait and changes nothing.
						_, err := h.client.Run(t.Context(), opFiveSteps, h.req(key, `{"n": 1}`))
						var inProgress *saga.InProgressError
						require.ErrorAs(t, err, &inProgress)
						require.Positive(t, inProgress.LeaseRemaining)
						_, err = h.client.Resume(t.Context(), h.scope, key, nil)
						require.ErrorAs(t, err, &inProgress, "Resume must not take a live lease")
						h.expireLease(key)
					}
				}

				var res *saga.Result
				var err error
				if how == "resume" {
					res, err = h.client.Resume(t.Context(), h.scope, key, nil)
				} else {
					res, err = h.client.Run(t.Context(), opFiveSteps, h.req(key, `{"n": 1}`))
				}
				require.NoError(t, err)
				require.Equal(t, http.StatusCreated, res.Response.Status, string(res.Response.Body))
				require.Equal(t, tc.rp == "finished", res.Replayed)
				require.Equal(t, tc.rp != "" && tc.rp != "finished", res.Resumed)

				for _, step := range []string{"reserve", "confirm", "finish"} {
					require.Equal(t, 1, h.effects(key, step), "effect of %s", step)
				}
				for step, want := range map[string]int{"notify": tc.notify, "ship": tc.ship} {
					n, resumed := h.ext.calls(key + "/" + step)
					require.Equal(t, want, n, "requests to %s", step)
					require.True(t, h.ext.acted(key+"/"+step))
					if tc.rp == "" {
						require.Equal(t, []bool{false}, resumed, "a fresh retry is not a resume")
					} else if n == 2 {
						require.Equal(t, []bool{false, true}, resumed, "a re-sent call must know an earlier one may have acted")
					}
				}
				var body map[string]string
				require.NoError(t, json.Unmarshal(res.Response.Body, &body))
				require.Equal(t, map[string]string{"notify": h.ext.receipts[key+"/notify"], "ship": h.ext.receipts[key+"/ship"]}, body)

				k = h.key(key)
				require.Equal(t, saga.KeyStatusCompleted, k.Status)
				require.Equal(t, "finished", k.RecoveryPoint)
				wantAttempts := 2
				if tc.rp == "" || tc.rp == "finished" {
					wantAttempts = 1
				}
				require.Equal(t, wantAttempts, k.Attempts)

				again, err := h.client.Run(t.Context(), opFiveSteps, h.req(key, `{"n": 1}`))
				require.NoError(t, err)
				require.True(t, again.Replayed)
				require.Equal(t, res.Response.Body, again.Response.Body)
				require.Equal(t, res.Response.Status, again.Response.Status)
				for _, step := range []string{"reserve", "confirm", "finish"} {
					require.Equal(t, 1, h.effects(key, step), "effect of %s after the replay", step)
				}
			})
		}
	}
}

func newID() string {
	return fmt.Sprintf("%x", randomBytes(8))
}

// TestCrashMidPhaseLeavesTheTransactionToTheServer crashes an execution after its phase wrote
// and before it committed, on sockets that go silent when closed: the server hears of the crash
// only when the test hangs them up, as it hears of a host that went away only when TCP gives up.
// Until then the dead session's transaction is open and holds its row lock; the client sends
// nothing more, no ROLLBACK either, and then PostgreSQL aborts the transaction itself and ends
// the session. The pool never hands the dead connection out again.
func TestCrashMidPhaseLeavesTheTransactionToTheServer(t *testing.T) {
	t.Parallel()
	const op = "hold"
	var pid uint32
	h := newHarness(t, nil, func(*harness) []*phases.Operation { return nil })
	_, err := h.db.Pool.Exec(t.Context(), `INSERT INTO test_reservation (id, key, status) VALUES ('seat-1', 'k', 'held')`)
	require.NoError(t, err)

	sockets := &chaos.SilentSockets{}
	t.Cleanup(sockets.HangUp)
	counter := &chaos.Counter{}
	cfg, err := pgxpool.ParseConfig(h.db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 1
	cfg.ConnConfig.DialFunc = sockets.Dial
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: chaos.WrapOperations([]*phases.Operation{{
		Name: op,
		Steps: []phases.Step{phases.Atomic("release_seat", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			err := tx.QueryRow(ctx, `UPDATE test_reservation SET status = 'released' WHERE id = 'seat-1' RETURNING pg_backend_pid()`).Scan(&pid)
			counter.Take()
			return err
		})},
	}}, h.points)})
	require.NoError(t, err)

	h.points.Crash(chaos.AfterStep(op, "release_seat"))
	require.True(t, crash.Run(func() { _, _ = client.Run(t.Context(), op, h.req("crash-"+newID(), `{}`)) }))
	require.Empty(t, counter.Take(), "the dead execution tried to send nothing after its crash point")

	var state string
	require.NoError(t, h.db.Pool.QueryRow(t.Context(), `SELECT state FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&state))
	require.Equal(t, "idle in transaction", state, "the server has not heard of the crash yet")
	_, err = h.db.Pool.Exec(t.Context(), `SELECT 1 FROM test_reservation WHERE id = 'seat-1' FOR UPDATE NOWAIT`)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the dead session still holds the row")
	require.Equal(t, "55P03", pgErr.Code)

	sockets.HangUp()
	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) == 0
	}, 30*time.Second, 10*time.Millisecond, "PostgreSQL ends the session whose socket closed")
	var status string
	require.NoError(t, h.db.Pool.QueryRow(t.Context(), `SELECT status FROM test_reservation WHERE id = 'seat-1' FOR UPDATE NOWAIT`).Scan(&status))
	require.Equal(t, "held", status, "the server aborted the dead session's transaction")

	var next uint32
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT pg_backend_pid()`).Scan(&next))
	require.NotEqual(t, pid, next, "the pool opened a new connection instead of the dead one")
}
