package payments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/worker"
)

// Two senders, each with its own secret.
var (
	gatewaySecret = []byte("gateway-secret-0123456789abcdef")
	bankSecret    = []byte("bank-secret-0123456789abcdef-xyz")
	webhookConfig = func() *payments.Config {
		return &payments.Config{WebhookSecrets: map[string][]byte{"gateway": gatewaySecret, "bank": bankSecret}}
	}
)

// delivery is one POST to /webhooks/{source}; signature "" sends no Pgsaga-Signature header.
type delivery struct {
	source, signature, eventID, body string
}

// signed is a delivery of body signed now with secrets.
func signed(source, body string, secrets ...[]byte) delivery {
	return delivery{source: source, body: body, signature: worker.SignWebhook(time.Now(), []byte(body), secrets...)}
}

func (e *env) deliver(d delivery) *reply {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/webhooks/"+d.source, bytes.NewBufferString(d.body))
	require.NoError(e.t, err)
	if d.signature != "" {
		req.Header.Set(worker.HeaderWebhookSignature, d.signature)
	}
	if d.eventID != "" {
		req.Header.Set("X-Event-ID", d.eventID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func event(id string) string {
	return `{"id": "` + id + `", "type": "payment.succeeded", "payload": {"id": "pay_1"}}`
}

// The receiver records each event once per source; redeliveries (a lost acknowledgement, an
// attacker replaying a captured delivery within the tolerance) are acknowledged, not applied.
func TestWebhookReceiverAppliesEachEventOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookConfig())
	d := signed("gateway", event("evt-1"), gatewaySecret)

	r := e.deliver(d)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.JSONEq(t, `{"event_id": "evt-1", "applied": true}`, string(r.body))
	r = e.deliver(d)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"event_id": "evt-1", "applied": false}`, string(r.body))
	r = e.deliver(signed("bank", event("evt-1"), bankSecret))
	require.JSONEq(t, `{"event_id": "evt-1", "applied": true}`, string(r.body), "ids are per source")
	require.Equal(t, 2, e.count(`SELECT count(*) FROM pgsaga_inbox`))

	for _, tc := range []struct {
		name   string
		d      delivery
		status int
		code   string
	}{
		{"no event id", signed("gateway", `{"type": "x"}`, gatewaySecret), http.StatusBadRequest, "invalid_request"},
		{"header id is not the signed one", delivery{source: "gateway", eventID: "evt-3", body: event("evt-2"),
			signature: worker.SignWebhook(time.Now(), []byte(event("evt-2")), gatewaySecret)}, http.StatusBadRequest, "invalid_request"},
		{"not json", signed("gateway", `{`, gatewaySecret), http.StatusBadRequest, "invalid_json"},
		{"too large", signed("gateway", `{"payload": "`+strings.Repeat("x", 1<<20)+`"}`, gatewaySecret), http.StatusRequestEntityTooLarge, "request_too_large"},
	} {
		r := e.deliver(tc.d)
		require.Equal(t, tc.status, r.status, tc.name)
		require.Equal(t, tc.code, r.code(t), tc.name)
	}
	require.Equal(t, 2, e.count(`SELECT count(*) FROM pgsaga_inbox`), "rejected deliveries record nothing")
}

// Nothing reaches the inbox without a signature that verifies with the source's own secret,
// over this very body, made within the tolerance.
func TestWebhookSignaturesAreVerified(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookConfig())
	body := event("evt-1")
	at := func(ts time.Time, b string, secret []byte) string { return worker.SignWebhook(ts, []byte(b), secret) }
	v1 := strings.Split(at(time.Now(), body, gatewaySecret), ",")[1]
	for _, tc := range []struct {
		name string
		d    delivery
		code string
	}{
		{"unsigned", delivery{source: "gateway", body: body}, "signature_missing"},
		{"unknown source", signed("acquirer", body, gatewaySecret), "unknown_webhook_source"},
		{"wrong secret", signed("gateway", body, []byte("not-the-gateway-secret-at-all")), "invalid_signature"},
		{"another source's secret", signed("gateway", body, bankSecret), "invalid_signature"},
		{"tampered body", delivery{source: "gateway", signature: at(time.Now(), body, gatewaySecret),
			body: strings.Replace(body, "pay_1", "pay_2", 1)}, "invalid_signature"},
		{"timestamp changed", delivery{source: "gateway", body: body,
			signature: "t=" + strconv.FormatInt(time.Now().Unix()-1, 10) + "," + v1}, "invalid_signature"},
		{"stale", delivery{source: "gateway", body: body, signature: at(time.Now().Add(-6*time.Minute), body, gatewaySecret)}, "signature_expired"},
		{"from the future", delivery{source: "gateway", body: body, signature: at(time.Now().Add(6*time.Minute), body, gatewaySecret)}, "signature_expired"},
		{"no timestamp", delivery{source: "gateway", body: body, signature: v1}, "invalid_signature"},
		{"no v1", delivery{source: "gateway", body: body, signature: "t=" + strconv.FormatInt(time.Now().Unix(), 10)}, "invalid_signature"},
		{"not hex", delivery{source: "gateway", body: body, signature: "t=" + strconv.FormatInt(time.Now().Unix(), 10) + ",v1=zz"}, "invalid_signature"},
		{"garbage", delivery{source: "gateway", body: body, signature: "Bearer x"}, "invalid_signature"},
	} {
		r := e.deliver(tc.d)
		require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", tc.name, r.body)
		require.Equal(t, tc.code, r.code(t), tc.name)
		require.NotEmpty(t, r.json(t)["message"], tc.name)
	}
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_inbox`), "nothing unverified is recorded")

	// Within the tolerance, an older signature is good.
	r := e.deliver(delivery{source: "gateway", body: body, signature: at(time.Now().Add(-4*time.Minute), body, gatewaySecret)})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
}

// A sender rotating its secret signs with the old and the new one (two v1 values) for a while;
// the receiver accepts the delivery whichever of the two it holds.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	newSecret := []byte("gateway-secret-rotated-9876543210")
	for i, secret := range [][]byte{gatewaySecret, newSecret} {
		e := newEnv(t, &payments.Config{WebhookSecrets: map[string][]byte{"gateway": secret}})
		d := signed("gateway", event("evt-rot"), gatewaySecret, newSecret)
		require.Equal(t, 2, strings.Count(d.signature, "v1="))
		r := e.deliver(d)
		require.Equal(t, http.StatusOK, r.status, "receiver holding secret %d: %s", i, r.body)
	}
}

// A sender can sign only for its own source: it cannot record an event id under another source
// and so pre-empt that source's event with the same id.
func TestWebhookSenderCannotPreemptAnotherSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookConfig())
	// The gateway's sender tries to plant evt-7 under bank, by path and by body.
	r := e.deliver(signed("bank", event("evt-7"), gatewaySecret))
	require.Equal(t, http.StatusUnauthorized, r.status)
	r = e.deliver(signed("gateway", `{"id": "evt-7", "type": "x", "source": "bank", "tenant": "bank"}`, gatewaySecret))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM pgsaga_inbox WHERE source = 'gateway' AND event_id = 'evt-7'`))
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_inbox WHERE source = 'bank'`))

	// The bank's own evt-7 is still fresh.
	r = e.deliver(signed("bank", event("evt-7"), bankSecret))
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.JSONEq(t, `{"event_id": "evt-7", "applied": true}`, string(r.body))
}

// Without secrets every webhook is refused; secrets must be distinct and long enough.
func TestWebhookSecretsConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	r := e.deliver(signed("gateway", event("evt-1"), gatewaySecret))
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Equal(t, "unknown_webhook_source", r.code(t))

	for name, secrets := range map[string]map[string][]byte{
		"short secret":  {"gateway": []byte("short")},
		"shared secret": {"gateway": gatewaySecret, "bank": gatewaySecret},
		"empty source":  {"": gatewaySecret},
	} {
		_, err := payments.New(&payments.Config{Pool: e.db.Pool, Gateway: e.sim.Gateway(), WebhookSecrets: secrets})
		require.ErrorContains(t, err, "WebhookSecrets", name)
	}
}

// Apply runs in the inbox's transaction: when it fails, the event is not recorded and the next
// delivery applies it.
func TestWebhookApplyFailureIsRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, err := e.db.Pool.Exec(t.Context(), `CREATE TABLE applied (event_id text NOT NULL, source text NOT NULL)`)
	require.NoError(t, err)
	var fail atomic.Bool
	fail.Store(true)
	h := payments.WebhookHandler(e.db.Pool, &payments.WebhookOpts{
		Secrets: map[string][]byte{"gateway": gatewaySecret},
		Apply: func(ctx context.Context, tx pgx.Tx, source string, ev *worker.Event) error {
			if _, err := tx.Exec(ctx, `INSERT INTO applied VALUES ($1, $2)`, ev.ID, source); err != nil {
				return err
			}
			if fail.Load() {
				return io.ErrUnexpectedEOF
			}
			return nil
		},
	})
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/{source}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.srv = srv

	r := e.deliver(signed("gateway", `{"id": "evt-1", "type": "x"}`, gatewaySecret))
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Zero(t, e.count(`SELECT count(*) FROM applied`))
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_inbox`))
	fail.Store(false)
	r = e.deliver(signed("gateway", `{"id": "evt-1", "type": "x"}`, gatewaySecret))
	require.Equal(t, http.StatusOK, r.status)
	var got map[string]any
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, true, got["applied"])
	require.Equal(t, 1, e.count(`SELECT count(*) FROM applied WHERE source = 'gateway'`), "Apply is told the authenticated source")
}
