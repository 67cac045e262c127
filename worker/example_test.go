package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// A request whose call failed is left started, with its next attempt scheduled; nobody retries
// it. The worker's sweep finds it when it is due and a resume job finishes it, exactly once.
func Example() {
	ctx := context.Background()
	db, err := dbtest.OpenDB(ctx, "worker_example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	var calls atomic.Int32
	notify := &phases.Operation{Name: "notify", Steps: []phases.Step{
		phases.Atomic("queued", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
		phases.Call("sent", func(context.Context, *phases.Run) error {
			if calls.Add(1) == 1 {
				return phases.RetryAfter(100*time.Millisecond, errors.New("the SMS gateway is down"))
			}
			return nil
		}),
		phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]string{"status": "sent"})
		}),
	}}
	client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{notify}})
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := saga.Scope{Tenant: "acme", Actor: "alice"}
	_, err = client.Run(ctx, "notify", &saga.Request{Scope: scope, Key: "sms-0001-abc", Method: "POST", Path: "/sms", Body: []byte(`{}`)})
	fmt.Println("the request failed:", err != nil)

	w, err := worker.New(&worker.Config{Pool: db.Pool, Client: client, SweepInterval: 50 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = w.Stop(ctx) }()

	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		k, err := client.KeyGet(ctx, scope, "sms-0001-abc")
		if err == nil && k.Status == saga.KeyStatusCompleted {
			fmt.Println(k.Status, k.Response.Status, string(k.Response.Body), "calls:", calls.Load())
			return
		}
	}
	fmt.Println("the worker did not finish the key")
	// Output:
	// the request failed: true
	// completed 201 {"status":"sent"} calls: 2
}
