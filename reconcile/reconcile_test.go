package reconcile_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/reconcile"
	"github.com/pgsaga/pgsaga/saga"
)

// env is the payments service on its own database and simulator, with a reconciler.
type env struct {
	t      *testing.T
	db     *dbtest.DB
	sim    *sim.Simulator
	client *saga.Client
	rec    *reconcile.Reconciler
	scope  saga.Scope
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := dbtest.NewDB(t)
	s := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: s.Gateway()})
	require.NoError(t, err)
	rec, err := reconcile.New(&reconcile.Config{Client: svc.Client(), Lister: s})
	require.NoError(t, err)
	return &env{t: t, db: db, sim: s, client: svc.Client(), rec: rec, scope: saga.Scope{Tenant: "tenant-1", Actor: "alice"}}
}

func (e *env) run(op, path, key, body string) *saga.Result {
	e.t.Helper()
	res, err := e.client.Run(e.t.Context(), op, &saga.Request{Scope: e.scope, Key: key, Method: "POST", Path: path, Body: []byte(body)})
	require.NoError(e.t, err)
	return res
}

// pay makes a paid payment on a new invoice and returns its key.
func (e *env) pay() string {
	key, _ := e.payWithBody()
	return key
}

// payWithBody is pay, returning the request's body too.
func (e *env) payWithBody() (string, string) {
	e.t.Helper()
	inv := e.run(payments.OpCreateInvoice, "/invoices", uuid.NewString(), `{"amount": 5000, "currency": "USD"}`)
	require.Equal(e.t, 201, inv.Response.Status, string(inv.Response.Body))
	var invoice struct{ ID string }
	require.NoError(e.t, jsonUnmarshal(inv.Response.Body, &invoice))
	key, body := uuid.NewString(), fmt.Sprintf(`{"invoice_id": %q, "amount": 2000}`, invoice.ID)
	res := e.run(payments.OpCreatePayment, "/payments", key, body)
	require.Equal(e.t, 201, res.Response.Status, string(res.Response.Body))
	return key, body
}

// loseKey undoes a payment's commits, as a failover that lost them does: its key, its journal,
// its payment row and what it did to the invoice.
func (e *env) loseKey(key string) {
	e.t.Helper()
	paymentID := strings.TrimPrefix(e.reference(key), "payment:")
	tx, err := e.db.Pool.Begin(e.t.Context())
	require.NoError(e.t, err)
	defer func() { _ = tx.Rollback(e.t.Context()) }()
	_, err = tx.Exec(e.t.Context(), `DELETE FROM pgsaga_call WHERE key = $1`, key)
	require.NoError(e.t, err)
	_, err = tx.Exec(e.t.Context(), `DELETE FROM pgsaga_key WHERE key = $1`, key)
	require.NoError(e.t, err)
	_, err = tx.Exec(e.t.Context(), `WITH lost AS (DELETE FROM payments WHERE id = $1 RETURNING invoice_id)
		UPDATE invoices SET paid = 0, reserved = 0, status = 'open' FROM lost WHERE id = lost.invoice_id`, paymentID)
	require.NoError(e.t, err)
	require.NoError(e.t, tx.Commit(e.t.Context()))
}

func (e *env) reference(key string) string {
	e.t.Helper()
	var ref string
	require.NoError(e.t, e.db.Pool.QueryRow(e.t.Context(), `SELECT reference FROM pgsaga_call_journal WHERE key = $1`, key).Scan(&ref))
	return ref
}

// TestCheck: a charge whose key completed is accounted for; one whose key is gone is reported,
// and so is a second charge under a completed key's reference; a started key's charge is not.
func TestCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	since := time.Now().Add(-time.Minute)
	res, err := e.rec.Check(t.Context(), since)
	require.NoError(t, err)
	require.Equal(t, &reconcile.Result{}, res, "nothing charged, nothing to report")

	kept, lost, doubled := e.pay(), e.pay(), e.pay()
	lostRef := e.reference(lost)
	e.loseKey(lost)
	second, err := e.sim.Gateway().Send(t.Context(), gateway.ChargeParams{Amount: 2000, Currency: "USD", Reference: e.reference(doubled)})
	require.NoError(t, err)
	// A charge whose key is still started (its call's outcome unknown, say) is in view elsewhere.
	startedKey := uuid.NewString()
	_, err = e.db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash, request_body, lease_token, locked_until)
		VALUES ('tenant-1', 'alice', $1, 'create_payment', 'POST', '/payments', '\x00', '\x00', gen_random_uuid(), now())`, startedKey)
	require.NoError(t, err)
	_, err = e.db.Pool.Exec(t.Context(), `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, outcome)
		VALUES ('tenant-1', 'alice', $1, 'charged', 1, 'payment:started', now(), now(), 'unknown')`, startedKey)
	require.NoError(t, err)
	_, err = e.sim.Gateway().Send(t.Context(), gateway.ChargeParams{Amount: 700, Currency: "USD", Reference: "payment:started"})
	require.NoError(t, err)

	res, err = e.rec.Check(t.Context(), since)
	require.NoError(t, err)
	require.Equal(t, 5, res.Checked)
	var refs []string
	for _, c := range res.Unmatched {
		refs = append(refs, c.Reference)
	}
	require.Equal(t, []string{lostRef, e.reference(doubled)}, refs, "the lost key's charge and the second charge")
	require.Equal(t, second.ID, res.Unmatched[1].ID)
	require.Equal(t, int64(2000), res.Unmatched[0].Amount)
	require.False(t, res.Unmatched[0].CreatedAt.IsZero())
	require.NotContains(t, refs, e.reference(kept))

	// Charges before since are not looked at.
	res, err = e.rec.Check(t.Context(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, &reconcile.Result{}, res)
}

// TestRunStoresWhatItFinds: Run stores the unmatched charges; a run that finds one again keeps
// it as first found; a charge whose client retried after all (its re-execution journals the same
// reference) is deleted, whether a run's window still covers it or not.
func TestRunStoresWhatItFinds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	since := time.Now().Add(-time.Minute)
	e.pay()
	a, aBody := e.payWithBody()
	b, bBody := e.payWithBody()
	aRef, bRef := e.reference(a), e.reference(b)
	e.loseKey(a)
	e.loseKey(b)

	res, stored, err := e.rec.Run(t.Context(), since)
	require.NoError(t, err)
	require.Len(t, res.Unmatched, 2)
	require.Equal(t, 2, stored)
	first, err := e.rec.List(t.Context(), 0)
	require.NoError(t, err)
	require.Len(t, first, 2)
	require.Equal(t, bRef, first[0].Charge.Reference, "newest first")
	require.Equal(t, aRef, first[1].Charge.Reference)
	require.Equal(t, gateway.StatusSucceeded, first[1].Charge.Status)
	require.Equal(t, int64(2000), first[1].Charge.Amount)

	_, stored, err = e.rec.Run(t.Context(), since)
	require.NoError(t, err)
	require.Equal(t, 2, stored)
	again, err := e.rec.List(t.Context(), 0)
	require.NoError(t, err)
	require.Equal(t, first[0].FoundAt, again[0].FoundAt, "found once")
	require.False(t, again[0].CheckedAt.Before(first[0].CheckedAt))

	// Both clients retry: their re-executions charge nothing and journal the same references.
	e.run(payments.OpCreatePayment, "/payments", a, aBody)
	e.run(payments.OpCreatePayment, "/payments", b, bBody)
	require.Equal(t, 3, e.sim.TotalCharges())
	// A run whose window no longer covers a's charge checks it again all the same.
	_, stored, err = e.rec.Run(t.Context(), time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 0, stored)
	n, err := e.rec.Count(t.Context())
	require.NoError(t, err)
	require.Equal(t, 0, n)
}
