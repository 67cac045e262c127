package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
)

func openTestQueue(t *testing.T, path string) *client.Queue {
	t.Helper()
	q, err := client.OpenQueue(path, &client.QueueOpts{LockTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = q.Close() })
	return q
}

func keysOf(items []client.QueuedIntent) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Intent.Key)
	}
	return keys
}

// invoiceServer answers POST /payments by the invoice in the body: "bad"
// is rejected with 422, "down" is 503 while down is set, anything else is
// 201. It records the invoice of every request in arrival order.
type invoiceServer struct {
	*httptest.Server
	mu       sync.Mutex
	down     bool
	invoices []string
}

func newInvoiceServer(t *testing.T) *invoiceServer {
	s := &invoiceServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			InvoiceID string `json:"invoice_id"`
		}
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		s.invoices = append(s.invoices, req.InvoiceID)
		down := s.down
		s.mu.Unlock()
		switch {
		case req.InvoiceID == "bad":
			w.WriteHeader(422)
			_, _ = w.Write([]byte(problemBody("amount_exceeds_balance", "too much")))
		case req.InvoiceID == "down" && down:
			w.WriteHeader(503)
			_, _ = w.Write([]byte(problemBody("temporarily_unavailable", "down")))
		default:
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"id":"pay_` + req.InvoiceID + `"}`))
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *invoiceServer) setDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

func (s *invoiceServer) Invoices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.invoices...)
}

func TestQueueSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := client.OpenQueue(path, nil)
	require.NoError(t, err)
	var want []*client.Intent
	for _, inv := range []string{"inv_1", "inv_2", "inv_3"} {
		intent := newPaymentIntent(t, inv, 100)
		require.NoError(t, q.Enqueue(intent))
		want = append(want, intent)
	}
	require.NoError(t, q.Close())

	q = openTestQueue(t, path)
	items, err := q.List()
	require.NoError(t, err)
	require.Len(t, items, 3)
	for i, item := range items {
		require.Equal(t, client.QueueStatePending, item.State)
		require.Equal(t, want[i].Key, item.Intent.Key)
		require.Equal(t, want[i].Body, item.Intent.Body)
		require.Equal(t, want[i].Header, item.Intent.Header)
		require.True(t, want[i].CreatedAt.Equal(item.Intent.CreatedAt))
		require.False(t, item.EnqueuedAt.IsZero())
	}
}

// The queue file is created 0600, and an existing one that others may read or write is refused.
func TestQueueRefusesAFileOthersCanRead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := client.OpenQueue(path, nil)
	require.NoError(t, err)
	require.NoError(t, q.Close())
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660, 0o602} {
		require.NoError(t, os.Chmod(path, mode))
		_, err := client.OpenQueue(path, nil)
		require.ErrorIs(t, err, client.ErrQueueUnusable, "mode %04o", mode)
		require.ErrorContains(t, err, fmt.Sprintf("mode %04o; run chmod 600", mode))
	}
	require.NoError(t, os.Chmod(path, 0o600))
	q, err = client.OpenQueue(path, nil)
	require.NoError(t, err)
	require.NoError(t, q.Close())
}

func TestQueueIsLockedWhileOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "queue.db")
	openTestQueue(t, path)

	_, err := client.OpenQueue(path, &client.QueueOpts{LockTimeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, client.ErrQueueUnusable)
	require.ErrorContains(t, err, path+" is locked by another process")
}

func TestQueueRejectsDuplicateKey(t *testing.T) {
	t.Parallel()
	q := openTestQueue(t, filepath.Join(t.TempDir(), "queue.db"))
	intent := newPaymentIntent(t, "inv_1", 100)
	require.NoError(t, q.Enqueue(intent))
	require.ErrorIs(t, q.Enqueue(intent), client.ErrAlreadyQueued)

	bad := *intent
	bad.Key = "x"
	require.ErrorIs(t, q.Enqueue(&bad), client.ErrInvalidIntent)
}

func TestQueueFlushInOrderHoldsRejections(t *testing.T) {
	t.Parallel()
	srv := newInvoiceServer(t)
	q := openTestQueue(t, filepath.Join(t.TempDir(), "queue.db"))
	c := newTestClient(t, srv.URL, newSleeper(), nil)
	for _, inv := range []string{"inv_1", "bad", "inv_2", "inv_3"} {
		require.NoError(t, q.Enqueue(newPaymentIntent(t, inv, 100)))
	}
	before, err := q.List()
	require.NoError(t, err)

	type report struct {
		key    string
		state  client.QueueState
		status int
		err    error
	}
	var reports []report
	res, err := q.Flush(context.Background(), c, func(item client.QueuedIntent, r *client.Result, err error) {
		reports = append(reports, report{item.Intent.Key, item.State, r.Status, err})
	})
	require.NoError(t, err)
	require.Equal(t, client.FlushResult{Succeeded: 3, Held: 1, Pending: 0}, res)
	require.Equal(t, []string{"inv_1", "bad", "inv_2", "inv_3"}, srv.Invoices())

	require.Len(t, reports, 4)
	require.Equal(t, keysOf(before), []string{reports[0].key, reports[1].key, reports[2].key, reports[3].key})
	require.Equal(t, 422, reports[1].status)
	require.Equal(t, client.QueueStateHeld, reports[1].state)
	require.ErrorAs(t, reports[1].err, new(*client.RejectedError))
	require.NoError(t, reports[2].err)

	after, err := q.List()
	require.NoError(t, err)
	require.Len(t, after, 1, "only the rejected intent is kept")
	held := after[0]
	require.Equal(t, before[1].Intent.Key, held.Intent.Key)
	require.Equal(t, client.QueueStateHeld, held.State)
	require.Equal(t, 422, held.LastStatus)
	require.Equal(t, "amount_exceeds_balance", held.LastCode)
	require.Equal(t, 1, held.Attempts)

	// A held intent is not submitted again.
	res, err = q.Flush(context.Background(), c, nil)
	require.NoError(t, err)
	require.Equal(t, client.FlushResult{Pending: 0}, res)
	require.Len(t, srv.Invoices(), 4)

	require.NoError(t, q.Remove(held.Intent.Key))
	require.ErrorIs(t, q.Remove(held.Intent.Key), client.ErrNotQueued)
	items, err := q.List()
	require.NoError(t, err)
	require.Empty(t, items)
}

func TestQueueFlushStopsAtUnknownOutcomeAndKeepsOrder(t *testing.T) {
	t.Parallel()
	srv := newInvoiceServer(t)
	srv.setDown(true)
	path := filepath.Join(t.TempDir(), "queue.db")
	q := openTestQueue(t, path)
	c := newTestClient(t, srv.URL, newSleeper(), &client.Config{MaxAttempts: 3})
	for _, inv := range []string{"inv_1", "down", "inv_2"} {
		require.NoError(t, q.Enqueue(newPaymentIntent(t, inv, 100)))
	}
	before, err := q.List()
	require.NoError(t, err)

	res, err := q.Flush(context.Background(), c, nil)
	require.ErrorAs(t, err, new(*client.OutcomeUnknownError))
	require.ErrorContains(t, err, before[1].Intent.Key)
	require.Equal(t, client.FlushResult{Succeeded: 1, Pending: 2}, res)
	require.Equal(t, []string{"inv_1", "down", "down", "down"}, srv.Invoices(), "inv_2 must not overtake the unknown one")

	items, err := q.List()
	require.NoError(t, err)
	require.Equal(t, keysOf(before[1:]), keysOf(items))
	require.Equal(t, client.QueueStatePending, items[0].State)
	require.Equal(t, 3, items[0].Attempts)
	require.Equal(t, 503, items[0].LastStatus)
	require.Contains(t, items[0].LastError, "outcome unknown")
	require.Zero(t, items[1].Attempts)

	// The attempt count survives a restart, and the next flush picks up
	// where this one stopped.
	require.NoError(t, q.Close())
	q = openTestQueue(t, path)
	srv.setDown(false)
	res, err = q.Flush(context.Background(), c, nil)
	require.NoError(t, err)
	require.Equal(t, client.FlushResult{Succeeded: 2}, res)
	require.Equal(t, []string{"inv_1", "down", "down", "down", "down", "inv_2"}, srv.Invoices())
}

func TestQueueFlushCancelledKeepsIntent(t *testing.T) {
	t.Parallel()
	srv := newInvoiceServer(t)
	q := openTestQueue(t, filepath.Join(t.TempDir(), "queue.db"))
	c := newTestClient(t, srv.URL, newSleeper(), nil)
	require.NoError(t, q.Enqueue(newPaymentIntent(t, "inv_1", 100)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	res, err := q.Flush(ctx, c, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, client.FlushResult{Pending: 1}, res)
	require.Empty(t, srv.Invoices())
}

func TestQueueEnqueueDuringFlushIsFlushed(t *testing.T) {
	t.Parallel()
	srv := newInvoiceServer(t)
	q := openTestQueue(t, filepath.Join(t.TempDir(), "queue.db"))
	c := newTestClient(t, srv.URL, newSleeper(), nil)
	require.NoError(t, q.Enqueue(newPaymentIntent(t, "inv_1", 100)))

	res, err := q.Flush(context.Background(), c, func(item client.QueuedIntent, _ *client.Result, _ error) {
		if item.Intent.Key != "" && len(srv.Invoices()) == 1 {
			require.NoError(t, q.Enqueue(newPaymentIntent(t, "inv_2", 100)))
		}
	})
	require.NoError(t, err)
	require.Equal(t, client.FlushResult{Succeeded: 2}, res)
	require.Equal(t, []string{"inv_1", "inv_2"}, srv.Invoices())
}
