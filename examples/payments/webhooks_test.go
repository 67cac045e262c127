package payments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/worker"
)

func (e *env) webhook(path, eventID, eventType, body string) *reply {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+path, bytes.NewBufferString(body))
	require.NoError(e.t, err)
	if eventID != "" {
		req.Header.Set("X-Event-ID", eventID)
	}
	if eventType != "" {
		req.Header.Set("X-Event-Type", eventType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// The service's receiver records each event once per source; redeliveries are acknowledged
// without being applied again.
func TestWebhookReceiverAppliesEachEventOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	body := `{"id": "evt-1", "type": "payment.succeeded", "payload": {"id": "pay_1"}}`

	r := e.webhook("/webhooks/gateway", "evt-1", "payment.succeeded", body)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.JSONEq(t, `{"event_id": "evt-1", "applied": true}`, string(r.body))
	r = e.webhook("/webhooks/gateway", "evt-1", "payment.succeeded", body)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"event_id": "evt-1", "applied": false}`, string(r.body))
	r = e.webhook("/webhooks/bank", "evt-1", "payment.succeeded", body)
	require.JSONEq(t, `{"event_id": "evt-1", "applied": true}`, string(r.body), "ids are per source")
	require.Equal(t, 2, e.count(`SELECT count(*) FROM pgsaga_inbox`))

	for _, tc := range []struct {
		name, id, body string
		status         int
		code           string
	}{
		{"no event id", "", body, http.StatusBadRequest, "invalid_request"},
		{"not json", "evt-2", `{`, http.StatusBadRequest, "invalid_json"},
		{"id mismatch", "evt-3", body, http.StatusBadRequest, "invalid_request"},
		{"too large", "evt-4", `{"payload": "` + strings.Repeat("x", 1<<20) + `"}`, http.StatusRequestEntityTooLarge, "request_too_large"},
	} {
		r := e.webhook("/webhooks/gateway", tc.id, "x", tc.body)
		require.Equal(t, tc.status, r.status, tc.name)
		require.Equal(t, tc.code, r.code(t), tc.name)
	}
	require.Equal(t, 2, e.count(`SELECT count(*) FROM pgsaga_inbox`), "rejected deliveries record nothing")
}

// Apply runs in the inbox's transaction: when it fails, the event is not recorded and the next
// delivery applies it.
func TestWebhookApplyFailureIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, err := e.db.Pool.Exec(t.Context(), `CREATE TABLE applied (event_id text NOT NULL)`)
	require.NoError(t, err)
	var fail atomic.Bool
	fail.Store(true)
	h := payments.WebhookHandler(e.db.Pool, &payments.WebhookOpts{Apply: func(ctx context.Context, tx pgx.Tx, source string, ev *worker.Event) error {
		if _, err := tx.Exec(ctx, `INSERT INTO applied VALUES ($1)`, ev.ID); err != nil {
			return err
		}
		if fail.Load() {
			return io.ErrUnexpectedEOF
		}
		return nil
	}})
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/{source}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.srv = srv

	r := e.webhook("/webhooks/gateway", "evt-1", "x", `{"type": "x"}`)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Zero(t, e.count(`SELECT count(*) FROM applied`))
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_inbox`))
	fail.Store(false)
	r = e.webhook("/webhooks/gateway", "evt-1", "x", `{"type": "x"}`)
	require.Equal(t, http.StatusOK, r.status)
	var got map[string]any
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, true, got["applied"])
	require.Equal(t, 1, e.count(`SELECT count(*) FROM applied`))
}
