package saga_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

// TestUniqueViolationIsAStoredConflict: a unique or exclusion constraint of business SQL that
// refuses an effect refuses it on every retry, so it is an answer, not a transient failure: 409
// conflict naming the constraint, stored and replayed (after the compensations of the phases
// that committed), whichever phase it hits.
func TestUniqueViolationIsAStoredConflict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, writeIn, table string }{
		{"unique, single phase", "first", `CREATE TABLE test_note (key text NOT NULL, note text NOT NULL CONSTRAINT test_note_once UNIQUE)`},
		{"unique, after a phase committed", "second", `CREATE TABLE test_note (key text NOT NULL, note text NOT NULL CONSTRAINT test_note_once UNIQUE)`},
		{"exclusion, single phase", "first", `CREATE TABLE test_note (key text NOT NULL, note text NOT NULL,
			CONSTRAINT test_note_once EXCLUDE USING btree (note WITH =))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil, noteTaker(tc.writeIn))
			_, err := h.db.Pool.Exec(t.Context(), tc.table)
			require.NoError(t, err)
			handler, err := h.client.Handler("note", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) { return h.scope, nil }})
			require.NoError(t, err)

			rec := serve(handler, "conflict-first-"+newID(), `{"note": "count-1"}`)
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())

			// A second intent that would post the same note: the constraint refuses it.
			key := "conflict-second-" + newID()
			rec = serve(handler, key, `{"note": "count-1"}`)
			require.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
			require.JSONEq(t, `"conflict"`, jsonField(t, rec.Body.Bytes(), "error"))
			require.Contains(t, rec.Body.String(), "test_note_once", "the message names the constraint")
			require.NotContains(t, strings.ToLower(rec.Body.String()), "sqlstate")
			first := rec.Body.Bytes()

			rec = serve(handler, key, `{"note": "count-1"}`)
			require.Equal(t, http.StatusConflict, rec.Code)
			require.Equal(t, "true", rec.Header().Get(saga.HeaderReplayed), "stored and replayed")
			require.Equal(t, first, rec.Body.Bytes())
			k := h.key(key)
			require.Equal(t, saga.KeyStatusCompleted, k.Status)
			require.Equal(t, http.StatusConflict, k.Response.Status)
			require.Equal(t, 1, h.count(`SELECT count(*) FROM test_note`))
			if tc.writeIn == "second" {
				require.Equal(t, 1, h.count(`SELECT count(*) FROM test_reservation WHERE key = $1 AND status = 'released'`, key),
					"the first phase was compensated")
			}
		})
	}
}
