package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/pgsaga/pgsaga/gateway/gatewaytest"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/gateway/webhook/webhooksim"
)

// The partner takes the delivery and its answer is lost: Deliver sends the same key again, and
// the partner answers with the delivery it took instead of taking a second one. In a call step
// the journal is the run (*phases.Run) and the key run.Reference(); here an in-memory journal.
func ExampleDeliver() {
	partner := webhooksim.New(nil)
	partner.LoseNext(1)
	srv := httptest.NewServer(partner)
	defer srv.Close()
	client, err := webhook.New(&webhook.Config{URL: srv.URL})
	if err != nil {
		fmt.Println("error:", err)
		return
	}

	var journal gatewaytest.Journal
	d, err := webhook.Deliver(context.Background(), &journal, client, webhook.Params{
		Key: "ref_order_0190c1d2", Body: json.RawMessage(`{"event":"order.submitted","order_id":"ord_1"}`),
	}, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(d.Status, d.ID, partner.Count("ref_order_0190c1d2"), journal.Outcomes())
	// Output: succeeded dlv_000001 1 [succeeded]
}
