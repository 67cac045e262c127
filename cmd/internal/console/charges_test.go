package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/reconcile"
)

// TestUnmatchedCharges: what a reconciliation stored is listed, as JSON and as a page, and
// only to an operator.
func TestUnmatchedCharges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	require.Equal(t, map[string]any{"unmatched": []any{}}, e.getJSON("/charges/unmatched"))
	empty := e.do(req{path: "/charges/unmatched", bearer: token, accept: browserAccept})
	require.Equal(t, http.StatusOK, empty.status)
	require.Contains(t, string(empty.body), "None: every charge")

	inv, _ := e.invoice(alice, 5000)
	lost, _ := e.payment(alice, inv, 2000, http.StatusCreated)
	var ref string
	require.NoError(t, e.db.Pool.QueryRow(t.Context(), `SELECT reference FROM pgsaga_call_journal WHERE key = $1`, lost).Scan(&ref))
	for _, sql := range []string{`DELETE FROM pgsaga_call WHERE key = $1`, `DELETE FROM pgsaga_key WHERE key = $1`} {
		_, err := e.db.Pool.Exec(t.Context(), sql, lost)
		require.NoError(t, err)
	}
	rec, err := reconcile.New(&reconcile.Config{Client: e.client, Lister: e.sim})
	require.NoError(t, err)
	_, stored, err := rec.Run(t.Context(), time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, stored)

	got := e.getJSON("/charges/unmatched")["unmatched"].([]any)
	require.Len(t, got, 1)
	c := got[0].(map[string]any)
	require.Equal(t, e.sim.Ledger().Charges[0].ID, c["provider_id"])
	require.Equal(t, ref, c["reference"])
	require.Equal(t, 2000.0, c["amount"])
	require.Equal(t, "USD", c["currency"])
	require.Equal(t, "succeeded", c["status"])
	require.Equal(t, e.sim.Ledger().Charges[0].CreatedAt.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano), c["created_at"])
	require.NotEmpty(t, c["found_at"])
	require.NotEmpty(t, c["checked_at"])

	page := e.do(req{path: "/charges/unmatched", bearer: token, accept: browserAccept})
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), ref)
	require.Contains(t, string(page.body), "2000 USD")
	overview := e.do(req{path: "/", bearer: token, accept: browserAccept})
	require.Contains(t, string(overview.body), `<strong class="age-stuck">1</strong> charge at the provider`)

	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/charges/unmatched"}).status)
}
