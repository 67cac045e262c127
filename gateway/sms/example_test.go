package sms_test

import (
	"context"
	"fmt"

	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/gateway/sms/smssim"
)

// A provider without idempotency keys sends the message and loses the answer: Send asks it by
// reference what it sent and sends nothing more. In a call step the journal is the run
// (*phases.Run); here an in-memory one.
func ExampleSend() {
	provider := smssim.New(nil)
	provider.LoseNext(1)

	var journal gatewaytest.Journal
	msg, err := sms.Send(context.Background(), &journal, provider, sms.Params{
		To: "+14155550100", Text: "Your order has shipped", Reference: "ref_order_0190c1d2",
	}, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(msg.Status, msg.ID, provider.Count("ref_order_0190c1d2"), journal.Outcomes())
	// Output: succeeded msg_000001 1 [succeeded]
}
