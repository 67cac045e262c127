package gateway_test

import (
	"context"
	"fmt"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// A lost response is resolved by re-sending the same derived key: one charge results.
func ExampleExecute() {
	provider := sim.New(nil) // idempotency keys and inquiry, no random faults
	provider.LoseNext(1)     // the first answer never arrives

	key := gateway.DeriveKey("payment", "0190c1d2")
	params := gateway.ChargeParams{Amount: 2000, Currency: "USD", Reference: key, IdempotencyKey: key}
	charge, err := gateway.Execute(context.Background(), provider.Gateway(), params, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(charge.Status, charge.Reference, provider.ChargesFor(key))

	// After a crash, the engine resumes with MayHaveReached: inquiry finds the charge.
	again, _ := gateway.Execute(context.Background(), provider.Gateway(), params, &gateway.ExecuteOpts{MayHaveReached: true})
	fmt.Println(again.ID == charge.ID, provider.ChargesFor(key))
	// Output:
	// succeeded payment:0190c1d2 1
	// true 1
}
