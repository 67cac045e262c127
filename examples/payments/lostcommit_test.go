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
