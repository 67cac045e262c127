package gateway_test

import (
	"context"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/phases"
)

// A lost response is resolved by re-sending the same derived key: one charge results. The
// journal (the engine's, here an in-memory one) records what each attempt came to; on resume
// it tells Execute that the earlier attempt may have reached the provider.
func ExampleExecute() {
	provider := sim.New(nil) // idempotency keys and inquiry, no random faults
	provider.LoseNext(1)     // the first answer never arrives

	key := gateway.DeriveKey("payment", "0190c1d2")
	params := gateway.ChargeParams{Amount: 2000, Currency: "USD", Reference: key, IdempotencyKey: key}
	var journal gatewaytest.Journal
	charge, err := gateway.Execute(context.Background(), &journal, provider.Gateway(), params, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(charge.Status, charge.Reference, provider.ChargesFor(key), journal.Outcomes())

	// Had the process died before recording, the engine would resume with a journal row
	// without an outcome: Execute asks the provider first and finds the charge.
	var resumed gatewaytest.Journal
	resumed.Add(phases.CallRecord{Step: "charge", Reference: key, StartedAt: time.Now()})
	again, _ := gateway.Execute(context.Background(), &resumed, provider.Gateway(), params, nil)
	fmt.Println(again.ID == charge.ID, provider.ChargesFor(key))
	// Output:
	// succeeded payment:0190c1d2 1 [succeeded]
	// true 1
}
