package saga_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// noteTaker writes the request's "note" in its first or its second phase (after a call); the
// note column refuses NUL (text) and notes longer than 10 characters (a CHECK). The first phase
// holds a reservation compensated by releasing it.
func noteTaker(writeIn string) func(*harness) []*phases.Operation {
	write := func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
		var body struct{ Note string }
		if err := run.Decode(&body); err != nil {
			return phases.Permanent(err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO test_note (key, note) VALUES ($1, $2)`, run.Key(), body.Note)
		return err
	}
	return func(*harness) []*phases.Operation {
		first := phases.Atomic("first", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			if _, err := tx.Exec(ctx, `INSERT INTO test_reservation (id, key, status) VALUES ($1, $1, 'held')`, run.Key()); err != nil {
				return err
			}
			if writeIn == "first" {
				return write(ctx, tx, run)
			}
			return nil
		}).WithCompensation(func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `UPDATE test_reservation SET status = 'released' WHERE id = $1`, run.Key())
			return err
		})
		return []*phases.Operation{{Name: "note", Steps: []phases.Step{
			first,
			phases.Call("call", func(context.Context, *phases.Run) error { return nil }),
			phases.Atomic("second", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				if writeIn == "second" {
					if err := write(ctx, tx, run); err != nil {
						return err
					}
				}
				return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
			}),
		}}}
	}
}

// TestDataTheDatabaseRefusesIsAClientError: a body that passes the JSON checks but holds data
// PostgreSQL refuses (a string with \u0000: SQLSTATE 22021; a CHECK) is no transient failure (a
// 503 on every retry would never give a definite answer): it is the client's error, 400
// invalid_request, with nothing stored before any phase committed, and stored (after the
// compensations) once one did.
func TestDataTheDatabaseRefusesIsAClientError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, writeIn, body string
		stored              bool
	}{
		{"NUL, first phase", "first", `{"note": "a\u0000b"}`, false},
		{"CHECK, first phase", "first", `{"note": "far too long a note"}`, false},
		{"NUL, after a phase committed", "second", `{"note": "a\u0000b"}`, true},
		{"CHECK, after a phase committed", "second", `{"note": "far too long a note"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, noteTaker(tc.writeIn))
			_, err := h.db.Pool.Exec(t.Context(), `CREATE TABLE test_note (key text NOT NULL, note text NOT NULL CHECK (length(note) <= 10))`)
			require.NoError(t, err)
			handler, err := h.client.Handler("note", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) { return h.scope, nil }})
			require.NoError(t, err)
			key := "data-" + newID()
			for range 2 {
				rec := serve(handler, key, tc.body)
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				require.JSONEq(t, `"invalid_request"`, jsonField(t, rec.Body.Bytes(), "error"))
				require.NotContains(t, rec.Body.String(), "test_note", "the message names no table or constraint")
				require.Equal(t, tc.stored, rec.Header().Get(saga.HeaderReplayed) == "true" || h.key(key) != nil)
			}
			k := h.key(key)
			if !tc.stored {
				require.Nil(t, k, "nothing is stored")
				require.Zero(t, h.count(`SELECT count(*) FROM test_reservation`))
				return
			}
			require.Equal(t, saga.KeyStatusCompleted, k.Status)
			require.Equal(t, http.StatusBadRequest, k.Response.Status)
			require.Equal(t, 1, h.count(`SELECT count(*) FROM test_reservation WHERE status = 'released'`), "the first phase was compensated")
			require.Zero(t, h.count(`SELECT count(*) FROM test_note`))
		})
	}
}

// TestFailoverErrorsAreTransient: the errors a database failover produces (a write reaching a
// standby, SQLSTATE 25006; a session ended by a shutdown or a crash, 57P01/57P02; a server
// starting up, 57P03; a broken connection, class 08) are transient whatever phase they hit: 503
// temporarily_unavailable with Retry-After, never a 4xx, nothing stored before a phase committed,
// the key started without a response after, and a retry finishes it.
func TestFailoverErrorsAreTransient(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"25006", "57P01", "57P02", "57P03", "08006", "08001"} {
		for _, phase := range []string{"first", "second"} {
			t.Run(code+" in the "+phase+" phase", func(t *testing.T) {
				t.Parallel()
				var failing atomic.Bool
				failing.Store(true)
				fail := func(ctx context.Context, tx pgx.Tx, run *phases.Run, name string) error {
					if name == phase && failing.Load() {
						return fmt.Errorf("error in phase %s: %w", name, &pgconn.PgError{Code: code, Message: "failover"})
					}
					return nil
				}
				h := newHarness(t, nil, func(*harness) []*phases.Operation {
					return []*phases.Operation{{Name: "failover", Steps: []phases.Step{
						phases.Atomic("first", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
							return fail(ctx, tx, run, "first")
						}),
						phases.Atomic("second", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
							if err := fail(ctx, tx, run, "second"); err != nil {
								return err
							}
							return run.Respond(http.StatusCreated, map[string]string{"ok": "yes"})
						}),
					}}}
				})
				handler, err := h.client.Handler("failover", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) { return h.scope, nil }})
				require.NoError(t, err)
				key := "failover-" + newID()
				rec := serve(handler, key, `{}`)
				require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
				require.JSONEq(t, `"temporarily_unavailable"`, jsonField(t, rec.Body.Bytes(), "error"))
				require.NotEmpty(t, rec.Header().Get("Retry-After"))
				k := h.key(key)
				if phase == "first" {
					require.Nil(t, k, "nothing is stored")
				} else {
					require.NotNil(t, k)
					require.Equal(t, saga.KeyStatusStarted, k.Status)
					require.Nil(t, k.Response)
					h.makeDue(key)
				}
				failing.Store(false)
				rec = serve(handler, key, `{}`)
				require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
				require.Equal(t, saga.KeyStatusCompleted, h.key(key).Status)
			})
		}
	}
}
