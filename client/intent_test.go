package client_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/client"
)

func TestNewIntentCreatesAUUIDv7Key(t *testing.T) {
	t.Parallel()
	before := time.Now().UTC()
	a, err := client.NewIntent("post", "/payments", map[string]any{"invoice_id": "inv_1", "amount": 2000}, nil)
	require.NoError(t, err)
	b, err := client.NewIntent("POST", "/payments", map[string]any{"invoice_id": "inv_1", "amount": 2000}, nil)
	require.NoError(t, err)

	id, err := uuid.Parse(a.Key)
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), id.Version())
	require.NotEqual(t, a.Key, b.Key, "two decisions, two keys, even with the same body")
	require.Equal(t, "POST", a.Method)
	require.JSONEq(t, `{"invoice_id":"inv_1","amount":2000}`, string(a.Body))
	require.False(t, a.CreatedAt.Before(before.Truncate(time.Millisecond)))
}

func TestNewIntentKeepsEncodedBodyBytes(t *testing.T) {
	t.Parallel()
	raw := []byte(`{ "total" : 1200 }`)
	intent, err := client.NewIntent("POST", "/orders", json.RawMessage(raw), nil)
	require.NoError(t, err)
	require.Equal(t, raw, intent.Body)

	raw[2] = 'X' // the intent owns its copy
	require.Equal(t, `{ "total" : 1200 }`, string(intent.Body))

	noBody, err := client.NewIntent("POST", "/orders/o_1/complete", nil, nil)
	require.NoError(t, err)
	require.Nil(t, noBody.Body)
}

func TestNewIntentOpts(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	intent, err := client.NewIntent("POST", "/payments", map[string]int{"amount": 1}, &client.IntentOpts{
		Key:       "my-key-0001",
		Header:    http.Header{"X-Tenant-ID": {"t"}},
		CreatedAt: at,
	})
	require.NoError(t, err)
	require.Equal(t, "my-key-0001", intent.Key)
	require.Equal(t, at, intent.CreatedAt)
	require.Equal(t, "t", intent.Header.Get("X-Tenant-ID"))
}

func TestNewIntentRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		opts         *client.IntentOpts
		want         string
	}{
		{"short key", "POST", "/p", nil, &client.IntentOpts{Key: "1234567"}, "key must be 8-255 characters"},
		{"long key", "POST", "/p", nil, &client.IntentOpts{Key: strings.Repeat("k", 256)}, "key must be 8-255 characters"},
		{"space in key", "POST", "/p", nil, &client.IntentOpts{Key: "abc def-ghi"}, "forbidden character at position 3"},
		{"quote in key", "POST", "/p", nil, &client.IntentOpts{Key: `abcdefgh"`}, "forbidden character at position 8"},
		{"backslash in key", "POST", "/p", nil, &client.IntentOpts{Key: `abcd\efgh`}, "forbidden character at position 4"},
		{"no method", "", "/p", nil, nil, "method"},
		{"bad method", "PO ST", "/p", nil, nil, "method"},
		{"relative path", "POST", "payments", nil, nil, "path"},
		{"invalid JSON bytes", "POST", "/p", []byte(`{"a":`), nil, "body is not valid JSON"},
		{"unencodable body", "POST", "/p", map[string]any{"f": func() {}}, nil, "error encoding body"},
		{"key in header", "POST", "/p", nil, &client.IntentOpts{Header: http.Header{"idempotency-key": {"x"}}}, "Header must not set Idempotency-Key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := client.NewIntent(tc.method, tc.path, tc.body, tc.opts)
			require.ErrorIs(t, err, client.ErrInvalidIntent)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
