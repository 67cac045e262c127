package shop_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
	"github.com/pgsaga/pgsaga/phases"
)

// network stands between the till and the shop: down, every connection is cut before the shop
// sees the request; losing, the shop serves the next request and its answer is lost on the way
// back.
type network struct {
	mu     sync.Mutex
	down   bool
	losing int
	next   http.Handler
}

func (n *network) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	down, lose := n.down, n.losing > 0
	if lose {
		n.losing--
	}
	n.mu.Unlock()
	if !down {
		if !lose {
			n.next.ServeHTTP(w, r)
			return
		}
		n.next.ServeHTTP(httptest.NewRecorder(), r) // served, the answer goes nowhere
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func (n *network) set(down bool, losing int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down, n.losing = down, losing
}

// A till queues orders while it has no network; the price of one product changes meanwhile.
// Flushing while still offline submits nothing and loses nothing. Once the till reconnects, the
// flush submits each queued order with the key made when it was queued: the first one's answer
// is lost on the way back, and its retry is replayed, one order; the order at the old price is
// answered 409 price_changed and stays in the queue as held for review, never repriced.
func TestOfflineTillSubmitsQueuedOrdersAfterReconnecting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.setPrice(till, "TEA-1", 450)
	e.setPrice(till, "COFFEE-1", 900)
	link := &network{next: e.handler, down: true}
	srv := httptest.NewServer(link)
	t.Cleanup(srv.Close)

	queue, err := client.OpenQueue(filepath.Join(t.TempDir(), "till.queue"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = queue.Close() })
	var keys []string
	for _, o := range []struct {
		sku   string
		price int
	}{{"TEA-1", 450}, {"COFFEE-1", 900}, {"TEA-1", 450}} {
		intent, err := client.NewIntent("POST", "/orders",
			map[string]any{"sku": o.sku, "quantity": 1, "unit_price": o.price, "phone": "+14155550100"}, nil)
		require.NoError(t, err)
		require.NoError(t, queue.Enqueue(intent))
		keys = append(keys, intent.Key)
	}
	e.setPrice(till, "COFFEE-1", 950) // while the till is offline

	submitter, err := client.NewClient(&client.Config{
		BaseURL:     srv.URL,
		Header:      http.Header{"X-Tenant-ID": {till.tenant}, "X-Actor-ID": {till.actor}},
		MaxAttempts: 3,
		BaseDelay:   time.Millisecond,
		MaxDelay:    5 * time.Millisecond,
	})
	require.NoError(t, err)

	res, err := queue.Flush(t.Context(), submitter, nil)
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError), "offline: the first order stays pending, and the rest behind it")
	require.Equal(t, client.FlushResult{Pending: 3}, res)
	require.Zero(t, e.count(`SELECT count(*) FROM shop_orders`))

	link.set(false, 1) // reconnected, and the first answer is lost
	answers := map[string]int{}
	res, err = queue.Flush(t.Context(), submitter, func(q client.QueuedIntent, r *client.Result, err error) {
		answers[q.Intent.Key] = r.Status
	})
	require.NoError(t, err)
	require.Equal(t, client.FlushResult{Succeeded: 2, Held: 1}, res)
	require.Equal(t, map[string]int{keys[0]: 201, keys[1]: 409, keys[2]: 201}, answers)

	left, err := queue.List()
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, keys[1], left[0].Intent.Key)
	require.Equal(t, client.QueueStateHeld, left[0].State)
	require.Equal(t, "price_changed", left[0].LastCode)

	require.Equal(t, 3, e.count(`SELECT count(*) FROM shop_orders`), "one order per queued intent, the lost answer's included")
	for i, key := range keys {
		want := "accepted"
		if i == 1 {
			want = "held"
		}
		order := e.do("GET", "/orders/"+phases.IntentID(till.tenant, till.actor, key, "ord"), till, "", "").json(t)
		require.Equal(t, want, order["status"], "order %d", i)
	}
}
