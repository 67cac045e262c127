package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	"github.com/pgsaga/pgsaga/client"
)

// Example queues an intent while offline, then flushes it. The key is made
// when the intent is, so a retry (here: after a lost answer) is recognised by
// the server and replayed instead of charging twice.
func Example() {
	// A server that loses its first answer, then replays the stored one.
	var mu sync.Mutex
	stored := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get("Idempotency-Key")
		if !stored[key] {
			stored[key] = true
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"pay_1","status":"succeeded"}`)
	}))
	defer srv.Close()

	dir, _ := os.MkdirTemp("", "queue")
	defer os.RemoveAll(dir)
	queue, err := client.OpenQueue(filepath.Join(dir, "queue.db"), nil)
	if err != nil {
		panic(err)
	}
	defer queue.Close()

	intent, err := client.NewIntent("POST", "/payments",
		map[string]any{"invoice_id": "inv_1", "amount": 2000},
		&client.IntentOpts{Header: http.Header{"X-Tenant-ID": {"tenant-1"}, "X-Actor-ID": {"actor-1"}}})
	if err != nil {
		panic(err)
	}
	if err := queue.Enqueue(intent); err != nil { // durable from here on
		panic(err)
	}

	c, err := client.NewClient(&client.Config{BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	res, err := queue.Flush(context.Background(), c, func(_ client.QueuedIntent, r *client.Result, err error) {
		fmt.Printf("status %d, replayed %t, attempts %d, err %v\n", r.Status, r.Replayed, r.Attempts, err)
	})
	fmt.Printf("%+v %v\n", res, err)
	// Output:
	// status 201, replayed true, attempts 2, err <nil>
	// {Succeeded:1 Held:0 Pending:0} <nil>
}
