package main_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestReconcileAgainstTheSimulator: the binary lists the simulator's charges over HTTP
// (--gateway-url) and reports the one whose key a failover lost, not the one whose key completed;
// with no --gateway-url its in-process simulator has charged nothing.
func TestReconcileAgainstTheSimulator(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := "--database-url=" + w.db.URL
	pay := func() string {
		key, inv := uuid.NewString(), w.invoice("t1", 5000)
		status, body := w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+inv+`", "amount": 2000}`)
		require.Equal(t, http.StatusCreated, status, string(body))
		return key
	}
	pay()
	lost := pay()
	var ref string
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT reference FROM pgsaga_call WHERE key = $1`, lost).Scan(&ref))

	r := pgsaga(t, nil, "reconcile", url, "--gateway-url", w.simURL, "--since", "1h", "--json")
	require.Equal(t, 0, r.code, r.String())
	require.JSONEq(t, `{"checked":2,"unmatched":[]}`, r.stdout)

	w.exec(`DELETE FROM pgsaga_call WHERE key = $1`, lost)
	w.exec(`DELETE FROM pgsaga_key WHERE key = $1`, lost)
	r = pgsaga(t, nil, "reconcile", url, "--gateway-url", w.simURL, "--since", "1h", "--json")
	require.Equal(t, 1, r.code, r.String())
	var got struct {
		Checked   int `json:"checked"`
		Unmatched []struct {
			ProviderID string `json:"provider_id"`
			Reference  string `json:"reference"`
			Amount     int64  `json:"amount"`
		} `json:"unmatched"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	require.Equal(t, 2, got.Checked)
	require.Len(t, got.Unmatched, 1)
	require.Equal(t, ref, got.Unmatched[0].Reference)
	require.Equal(t, w.sim.Ledger().Charges[1].ID, got.Unmatched[0].ProviderID)
	require.Equal(t, int64(2000), got.Unmatched[0].Amount)

	r = pgsaga(t, nil, "reconcile", url, "--gateway-url", w.simURL, "--since", "1h")
	require.Equal(t, 1, r.code, r.String())
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), r.stdout)
	require.True(t, strings.HasPrefix(r.stdout, got.Unmatched[0].ProviderID+" "+ref+" 2000 USD succeeded "), r.stdout)

	r = pgsaga(t, nil, "reconcile", url, "--since", "1h", "--json")
	require.Equal(t, 0, r.code, r.String())
	require.JSONEq(t, `{"checked":0,"unmatched":[]}`, r.stdout)
}
