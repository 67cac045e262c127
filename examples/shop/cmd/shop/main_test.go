package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// The command migrates the rest itself: River's tables and the shop's.
func TestMain(m *testing.M) {
	sagatest.Main(m, &sagatest.DBOpts{Migrations: &migrations.MigrateOpts{SkipRiver: true}})
}

// The service runs as a process: it migrates, serves the API, ships an order (a text, a partner
// delivery), its worker delivers the outbox's order.shipped event, and it stops cleanly when
// its context ends.
func TestServiceRunsAndStops(t *testing.T) {
	t.Parallel()
	db := sagatest.NewDB(t)
	var (
		mu     sync.Mutex
		events []string
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, r.Header.Get("X-Event-Type"))
	}))
	t.Cleanup(receiver.Close)

	ctx, cancel := context.WithCancel(t.Context())
	out, stdout := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--database-url", db.URL, "--listen", "127.0.0.1:0", "--events-url", receiver.URL}, stdout, &stderr)
		_ = stdout.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	go func() { _, _ = io.Copy(io.Discard, out) }()
	base := strings.Fields(strings.TrimPrefix(line, "shop: listening on "))[0]

	call := func(method, path, key, body string) (int, map[string]any) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Tenant-ID", "corner-shop")
		req.Header.Set("X-Actor-ID", "till-1")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var v map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		return resp.StatusCode, v
	}
	status, _ := call("PUT", "/products/TEA-1", "", `{"price":450}`)
	require.Equal(t, http.StatusOK, status)
	status, order := call("POST", "/orders", "order-key-0001", `{"sku":"TEA-1","quantity":1,"unit_price":450,"phone":"+14155550100"}`)
	require.Equal(t, http.StatusCreated, status, order)
	status, shipment := call("POST", "/orders/"+order["id"].(string)+"/ship", "ship-key-0001", `{}`)
	require.Equal(t, http.StatusCreated, status, shipment)
	require.Equal(t, "succeeded", shipment["message_status"])
	require.NotEmpty(t, shipment["delivery_id"])

	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) == 1 && events[0] == "order.shipped"
	}, 30*time.Second, 50*time.Millisecond, "the worker delivers the outbox's event")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "stderr: %s", stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("the service did not stop")
	}
}

func TestDatabaseURLIsRequired(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	err := run(t.Context(), nil, io.Discard, io.Discard)
	require.ErrorContains(t, err, "--database-url")
}
