package payments_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

// loseCommits undoes what a payment's commits wrote, as a failover under asynchronous
// replication that loses the old primary's last acknowledged commits does: the key, its call
// journal, the payment row and the invoice's reservation and payment are gone; the charge at
// the provider stays.
func (e *env) loseCommits(as who, key, invoice, paymentID string) {
	e.t.Helper()
	ctx := e.t.Context()
	tx, err := e.db.Pool.Begin(ctx)
	require.NoError(e.t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	for _, sql := range []string{
		`DELETE FROM pgsaga_call WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`,
		`DELETE FROM pgsaga_key WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`,
	} {
		_, err := tx.Exec(ctx, sql, as.tenant, as.actor, key)
		require.NoError(e.t, err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM payments WHERE id = $1`, paymentID)
	require.NoError(e.t, err)
	require.EqualValues(e.t, 1, tag.RowsAffected())
	_, err = tx.Exec(ctx, `UPDATE invoices SET paid = 0, reserved = 0, status = 'open' WHERE id = $1`, invoice)
	require.NoError(e.t, err)
	require.NoError(e.t, tx.Commit(ctx))
}

// TestReexecutionAfterLostCommitsChargesOnce: a payment completed, then a failover lost its
// commits (key, journal, payment row) while the charge stayed at the provider. The client's
// retry runs the operation again from scratch: it must make the same payment id and send the
// same downstream reference, so that the provider's key (keys only) or the inquiry before the
// charge (inquiry only) finds the first charge, and the provider holds one.
func TestReexecutionAfterLostCommitsChargesOnce(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]*sim.Config{
		"keys only":    {Inquiry: off()},
		"inquiry only": {Idempotency: off()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newChaosEnv(t, chaosOpts{sim: cfg})
			inv := e.createInvoice(alice, 5000)
			key, body := newKey(), paymentBody(inv, 2000)

			first := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusCreated, first.status, string(first.body))
			paymentID := first.json(t)["id"].(string)
			var reference string
			require.NoError(t, e.db.Pool.QueryRow(t.Context(),
				`SELECT reference FROM pgsaga_call WHERE key = $1`, key).Scan(&reference))
			require.Equal(t, 1, e.sim.TotalCharges())

			e.loseCommits(alice, key, inv, paymentID)

			again := e.do("POST", "/payments", alice, key, body)
			require.Equal(t, http.StatusCreated, again.status, string(again.body))
			require.Empty(t, again.header.Get("Idempotent-Replayed"), "a re-execution, not a replay")
			require.Equal(t, 1, e.sim.TotalCharges(), "one charge at the provider: %+v", e.sim.Ledger())
			require.Equal(t, paymentID, again.json(t)["id"], "the same payment id")
			var againReference string
			require.NoError(t, e.db.Pool.QueryRow(t.Context(),
				`SELECT reference FROM pgsaga_call WHERE key = $1`, key).Scan(&againReference))
			require.Equal(t, reference, againReference, "the same downstream reference")
			e.requirePaidOnce(alice, inv, 5000, again.json(t))
			require.Equal(t, first.body, again.body, "the same answer")
			e.requireReplays(alice, key, body, again)
		})
	}
}

// TestRetryAfterRetentionFindsTheSameRows: a key deleted after its retention (its rows stay)
// is run again by a late retry. The ids derive from the intent, so the retry finds the invoice
// and the settled payment it made before and answers them as they stand, charging nothing; the
// same key sent for another payment is refused.
func TestRetryAfterRetentionFindsTheSameRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	forget := func(key string) {
		t.Helper()
		tag, err := e.db.Pool.Exec(t.Context(), `DELETE FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key)
		require.NoError(t, err)
		require.EqualValues(t, 1, tag.RowsAffected())
	}
	invKey, invBody := newKey(), `{"amount": 5000, "currency": "USD"}`
	created := e.do("POST", "/invoices", alice, invKey, invBody)
	require.Equal(t, http.StatusCreated, created.status, string(created.body))
	inv := created.json(t)["id"].(string)

	key, body := newKey(), paymentBody(inv, 2000)
	first := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	forget(key)
	again := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusCreated, again.status, string(again.body))
	require.Equal(t, first.body, again.body, "the payment as it stands")
	require.Equal(t, 1, e.sim.TotalCharges())
	require.Equal(t, 1, e.count(`SELECT count(*) FROM payments`))
	invoice := e.do("GET", "/invoices/"+inv, alice, "", "").json(t)
	require.Equal(t, float64(2000), invoice["paid"], "paid once")

	forget(key)
	other := e.do("POST", "/payments", alice, key, paymentBody(inv, 1000))
	require.Equal(t, http.StatusUnprocessableEntity, other.status, string(other.body))
	require.Equal(t, "idempotency_key_reused", other.code(t))
	require.Equal(t, 1, e.sim.TotalCharges())

	forget(invKey)
	invAgain := e.do("POST", "/invoices", alice, invKey, invBody)
	require.Equal(t, http.StatusCreated, invAgain.status, string(invAgain.body))
	require.Equal(t, inv, invAgain.json(t)["id"])
	require.Equal(t, float64(2000), invAgain.json(t)["paid"], "rendered as it stands now")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices`))
}
