// Package readme is the payment flow docs/payment-flow.md shows, compiled: readme_test.go checks
// that the page's snippet is this file's, word for word, between the markers.
package readme

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Payment is a pending payment, saved by the first phase for the steps after it.
type Payment struct {
	ID       string
	Amount   int64
	Currency string
}

// Mount builds the payment operation and serves it at POST /payments.
func Mount(pool *pgxpool.Pool, gw gateway.Gateway, mux *http.ServeMux,
	scopeFromAuth saga.ScopeFunc,
	validatePayment func(body []byte) error,
	insertPendingPayment func(ctx context.Context, tx pgx.Tx, id string, body []byte) (Payment, error),
	recordResult phases.AtomicFunc) error {
	// README begin
	payment := phases.Value[Payment]("payment")
	charge := phases.Value[gateway.Charge]("charge")
	createPayment := &phases.Operation{
		Name:     "create_payment",
		Validate: validatePayment, // 400 invalid_request, nothing stored
		Steps: []phases.Step{
			// Transaction 1: lock the invoice, check the balance, insert a pending payment whose
			// id derives from the intent (tenant, actor, idempotency key): "pay_" + 26 base32.
			phases.Atomic("payment_created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				p, err := insertPendingPayment(ctx, tx, run.IntentID("pay"), run.Body()) // phases.Reject(422, …) if over balance
				if err != nil {
					return err
				}
				return payment.Set(run, p)
			}),
			// Between transactions: charge under the call's reference, derived from the intent
			// too ("ref_" + 26 base32; Step.WithReference declares another), journaled (with a
			// renewed lease) before the charge is sent.
			phases.Call("charged", func(ctx context.Context, run *phases.Run) error {
				p, err := payment.Get(run)
				if err != nil {
					return err
				}
				// run is the call's journal: Execute asks the gateway first when an earlier
				// attempt may have charged, never re-sends a pending charge, and records what
				// this attempt came to.
				c, err := gateway.Execute(ctx, run, gw, gateway.ChargeParams{Amount: p.Amount,
					Currency: p.Currency, Reference: run.Reference(), IdempotencyKey: run.Reference()}, nil)
				if err != nil {
					return err // the key stays started: a retry or the worker continues
				}
				return charge.Set(run, *c)
			}),
			// Transaction 2: record the result and answer (stored, replayed byte for byte).
			phases.Atomic("result_recorded", recordResult), // run.Respond(201, …) or 402 card_declined
		},
	}

	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{createPayment}})
	if err != nil {
		return err
	}
	handler, err := client.Handler("create_payment", &saga.HandlerOpts{Scope: scopeFromAuth})
	if err != nil {
		return err
	}
	mux.Handle("POST /payments", handler)
	// README end
	return nil
}
