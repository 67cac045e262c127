package main_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

func TestResumeFinishesAParkedKeyWithOneCharge(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET status = 'failed', last_error = 'attempts exhausted' WHERE key = $1`, key)
	require.Zero(t, w.sim.TotalCharges())

	// The service itself refuses the parked key.
	status, body := w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Contains(t, string(body), "operation_parked")

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, r.code, r.String())
	lines := strings.SplitN(r.stdout, "\n", 2)
	require.Equal(t, "201 Created", lines[0])
	require.Contains(t, lines[1], `"status":"succeeded"`)

	var paymentID string
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT id FROM payments WHERE invoice_id = $1`, invoiceID).Scan(&paymentID))
	require.Equal(t, 1, w.sim.ChargesFor(gateway.DeriveKey("payment", paymentID)))
	require.Equal(t, 1, w.sim.TotalCharges())
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded'`, invoiceID))

	// The client's retry now replays what resume stored, byte for byte.
	status, body = w.post("t1", "alice", key, "/payments", `{"invoice_id": "`+invoiceID+`", "amount": 2000}`)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, strings.TrimSuffix(lines[1], "\n"), string(body))

	// Resuming a completed key prints the stored response and charges nothing.
	again := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, again.code, again.String())
	require.Equal(t, r.stdout, again.stdout)
	require.Equal(t, 1, w.sim.TotalCharges())
}

func TestResumeInquiresBeforeChargingAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, invoiceID := w.stuckPayment("t1", "alice")
	// As if a later attempt's charge reached the gateway and its process died before recording
	// it: the charge exists under the derived key, the key is still at payment_created.
	var paymentID string
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT id FROM payments WHERE invoice_id = $1`, invoiceID).Scan(&paymentID))
	ref := gateway.DeriveKey("payment", paymentID)
	_, err := w.sim.Gateway().Charge(t.Context(), gateway.ChargeParams{Amount: 2000, Currency: "USD", Reference: ref, IdempotencyKey: ref})
	require.NoError(t, err)
	charged := w.sim.TotalCharges()
	require.Equal(t, 1, charged)
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	require.Equal(t, 0, r.code, r.String())
	require.True(t, strings.HasPrefix(r.stdout, "201 Created\n"), r.stdout)
	// Inquiry found the charge: nothing new was charged.
	require.Equal(t, charged, w.sim.TotalCharges())
	require.Equal(t, 1, w.count(`SELECT count(*) FROM payments WHERE invoice_id = $1 AND status = 'succeeded'`, invoiceID))
}

func TestResumeRefusesWhileALeaseIsHeld(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	// Another process holds the key: a live lease with its own token.
	w.exec(`UPDATE pgsaga_key SET locked_until = now() + interval '1 hour', lease_token = gen_random_uuid() WHERE key = $1`, key)
	var attempts int
	require.NoError(t, w.db.Pool.QueryRow(t.Context(), `SELECT attempts FROM pgsaga_key WHERE key = $1`, key).Scan(&attempts))

	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	requireFailure(t, r, "held by another process")
	require.Empty(t, r.stdout)
	require.Zero(t, w.sim.TotalCharges())
	require.Equal(t, attempts, w.count(`SELECT attempts FROM pgsaga_key WHERE key = $1 AND status = 'started'`, key))
}

func TestResumeMissingKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--tenant", "t1", "--actor", "alice", "no-such-key-1")
	requireFailure(t, r, `no key "no-such-key-1" for tenant t1 actor alice`)
}

func TestResumeKeepsAFailingKeyStarted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	w.exec(`UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)
	w.sim.FailNext(100)
	r := pgsaga(t, nil, "resume", "--database-url", w.db.URL, "--gateway-url", w.simURL, "--tenant", "t1", "--actor", "alice", key)
	requireFailure(t, r, "stays started")
	require.Equal(t, 1, w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'started'`, key))
	require.Zero(t, w.sim.TotalCharges())
}
