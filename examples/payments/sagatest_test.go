package payments_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// TestPaymentIsExactlyOnceAtEveryCrashPoint runs create_payment through sagatest: crashed before
// and after each of its steps (the open transaction lost with its connection), recovered by the
// client's retry and by the worker, each case must end with one charge at the provider, one
// succeeded payment and the invoice paid once — for a provider with keys and inquiry, and for
// one with inquiry only (the worst case a gateway may be: every charge sent is a charge).
func TestPaymentIsExactlyOnceAtEveryCrashPoint(t *testing.T) {
	t.Parallel()
	off := false
	for name, cfg := range map[string]*sim.Config{
		"keys and inquiry": nil,
		"inquiry only":     {Idempotency: &off},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.sim = sim.New(cfg)
			svc, err := payments.New(&payments.Config{Pool: e.db.Pool, Gateway: e.sim.Gateway()})
			require.NoError(t, err)
			op, ok := svc.Client().Operation(payments.OpCreatePayment)
			require.True(t, ok)

			report, err := sagatest.Check(t.Context(), &sagatest.CheckParams{
				DB:        e.db.Pool,
				Operation: op,
				Request: func(ctx context.Context, name string) (*saga.Request, error) {
					inv := e.createInvoice(alice, 3000)
					return &saga.Request{Scope: saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, Key: "pay-" + name + "-" + inv,
						Method: "POST", Path: "/payments", Body: []byte(paymentBody(inv, 3000))}, nil
				},
				Effects: func(ctx context.Context, req *saga.Request) (map[string]int, error) {
					var body struct {
						InvoiceID string `json:"invoice_id"`
					}
					if err := json.Unmarshal(req.Body, &body); err != nil {
						return nil, err
					}
					out := map[string]int{}
					var paymentID string
					var succeeded, paid int
					err := e.db.Pool.QueryRow(ctx, `SELECT min(p.id), count(*) FILTER (WHERE p.status = 'succeeded'), max(i.paid)
						FROM invoices i LEFT JOIN payments p ON p.invoice_id = i.id WHERE i.id = $1`, body.InvoiceID).Scan(&paymentID, &succeeded, &paid)
					if err != nil {
						return nil, err
					}
					out["succeeded payment"] = succeeded
					out["invoice paid"] = paid / 3000
					out["charge"] = e.sim.ChargesFor(gateway.DeriveKey("payment", paymentID))
					return out, nil
				},
			})
			require.NoError(t, err)
			require.Empty(t, report.Failures)
			for _, c := range report.Cases {
				require.Equal(t, 201, c.Status, "%s by %s", c.Point, c.Recovery)
			}
		})
	}
}
