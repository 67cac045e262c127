package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// unknowableThenSettled charges through a gateway that can neither be asked (no inquiry) nor
// de-duplicates (no idempotency keys), and loses the answer: nothing can tell whether the money
// moved, so the payment is parked (outcome_unknown) without a second charge and without
// compensating. An operator then looks at the provider (the simulator's ledger), settles the
// payment as succeeded with the charge it finds (what `pgsaga settle` does), and the client's
// retry gets that answer.
func (d *demo) unknowableThenSettled(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	restore, err := d.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = false, false })
	if err != nil {
		return err
	}
	defer func() { _, _ = d.sim.SetFaults(func(s *sim.Settings) { *s = restore }) }()
	d.sim.LoseNext(1)
	defer d.sim.LoseNext(0)

	key, body := uuid.NewString(), paymentBody(inv, 2000)
	first, err := d.post(ctx, res, "", "alice", key, "/payments", body)
	if err != nil {
		return err
	}
	if first.status != http.StatusServiceUnavailable || first.code() != saga.CodeOperationParked {
		return fmt.Errorf("a payment whose outcome nothing can tell: want 503 %s, got %s", saga.CodeOperationParked, first)
	}
	scope := saga.Scope{Tenant: d.tenant, Actor: "alice"}
	k, err := d.client.KeyGet(ctx, scope, key)
	if err != nil {
		return err
	}
	if k.ParkedReason != saga.ParkedOutcomeUnknown || len(k.Calls) != 1 {
		return fmt.Errorf("want a key parked outcome_unknown with one journaled call, got %s with %d calls", k.ParkedReason, len(k.Calls))
	}

	// The operator looks the journaled reference up at the provider.
	var charge *gateway.Charge
	for _, c := range d.sim.Ledger().Charges {
		if c.Reference == k.Calls[0].Reference {
			charge = &c
		}
	}
	if charge == nil {
		return fmt.Errorf("the provider holds no charge for %s", k.Calls[0].Reference)
	}
	settled, err := d.client.Settle(ctx, scope, key, &saga.SettleParams{Outcome: phases.SettleSucceeded,
		Note: "charge found in the provider's dashboard", Reference: charge.ID, By: "demo-operator"})
	if err != nil {
		return err
	}
	retry, err := d.post(ctx, res, "", "alice", key, "/payments", body)
	if err != nil {
		return err
	}
	if retry.status != http.StatusCreated || !retry.replayed() || string(retry.body) != string(settled.Response.Body) {
		return fmt.Errorf("the client's retry after the settlement: want the settled 201, replayed; got %s", retry)
	}
	res.expect(inv, 1)
	res.verdict = fmt.Sprintf("ok: parked %s (nothing to ask), settled by an operator with %s; retry replayed", saga.ParkedOutcomeUnknown, charge.ID)
	return nil
}
