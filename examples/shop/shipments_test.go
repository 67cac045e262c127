package shop_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/shop"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Shipping an order texts the customer once and notifies the partner once, emits order.shipped
// with the move to shipped, and records the shipment. A second intent to ship it is a stored
// 409.
func TestShipTextsTheCustomerAndNotifiesThePartner(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.acceptedOrder(till, "TEA-1")
	key := newKey()
	r := e.do("POST", "/orders/"+id+"/ship", till, key, `{}`)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.JSONEq(t, `{"order_id":"`+id+`","status":"shipped","message_id":"msg_000001","message_status":"succeeded",
		"delivery_id":"dlv_000001"}`, string(r.body))

	textRef, partnerRef := shipReference(till, key, "customer_texted"), shipReference(till, key, "partner_notified")
	require.Equal(t, 1, e.sms.Count(textRef))
	require.Equal(t, 1, e.partner.Count(partnerRef))
	msgs := e.sms.Records()
	require.Len(t, msgs, 1)
	require.Equal(t, "Your order "+id+" (2 x TEA-1) has shipped.", msgs[0].Text)
	deliveries := e.partner.Records()
	require.Len(t, deliveries, 1)
	require.JSONEq(t, `{"event":"order.shipped","order_id":"`+id+`","sku":"TEA-1","quantity":2}`, string(deliveries[0].Body))
	require.Equal(t, 1, e.events("order.shipped", phases.IntentID(till.tenant, till.actor, key, "evt")))
	require.Equal(t, "shipped", e.do("GET", "/orders/"+id, till, "", "").json(t)["status"])

	again := e.do("POST", "/orders/"+id+"/ship", till, key, `{}`)
	require.Equal(t, r.body, again.body)
	second := e.do("POST", "/orders/"+id+"/ship", till, newKey(), `{}`)
	require.Equal(t, http.StatusConflict, second.status)
	require.Equal(t, "order_already_shipped", second.code(t))
	require.Len(t, e.sms.Records(), 1, "nothing more was sent")
	require.Equal(t, http.StatusNotFound, e.do("POST", "/orders/ord_nope/ship", till, newKey(), `{}`).status)
}

// The SMS provider sends the text and its answer is lost. The provider has no idempotency keys:
// sending again would text the customer twice. The call asks the provider by reference what it
// sent, finds the message and sends nothing more: one message. The partner's lost answer is
// resolved by sending the same key, which it answers with its first delivery.
func TestLostAnswersAreResolvedWithoutASecondEffect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	id := e.acceptedOrder(till, "TEA-1")
	e.sms.LoseNext(1)
	e.partner.LoseNext(1)
	key := newKey()
	r := e.do("POST", "/orders/"+id+"/ship", till, key, `{}`)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.Equal(t, 1, e.sms.Count(shipReference(till, key, "customer_texted")), "one message, found by inquiry")
	require.Len(t, e.sms.Records(), 1)
	require.Equal(t, 1, e.partner.Count(shipReference(till, key, "partner_notified")), "one delivery, by its key")

	k, err := e.svc.Client().KeyGet(t.Context(), saga.Scope{Tenant: till.tenant, Actor: till.actor}, key)
	require.NoError(t, err)
	for _, c := range k.Calls {
		require.Equal(t, phases.CallOutcomeSucceeded, c.Outcome, "%s: the lost answer was resolved within the call", c.Step)
	}
}

// inquiryDown is an SMS provider whose inquiry cannot be reached once a text was sent, while
// down is set.
type inquiryDown struct {
	sms.Provider
	down, sent atomic.Bool
}

func (p *inquiryDown) Send(ctx context.Context, params sms.Params) (*sms.Message, error) {
	p.sent.Store(true)
	return p.Provider.Send(ctx, params)
}

func (p *inquiryDown) Inquire(ctx context.Context, reference string) ([]sms.Message, error) {
	if p.down.Load() && p.sent.Load() {
		return nil, gateway.NotDone(errors.New("the provider's inquiry is unreachable"))
	}
	return p.Provider.Inquire(ctx, reference)
}

// The text's answer is lost and the provider cannot be asked about it: the request ends without
// an answer (503) and the journal records that the text may have been sent. The worker's resume
// asks the provider before it sends anything, finds the message, and takes it. One message.
func TestResumeAfterALostTextAsksFirst(t *testing.T) {
	t.Parallel()
	provider := &inquiryDown{}
	e := newEnv(t, func(cfg *shop.Config) {
		provider.Provider = cfg.SMS
		cfg.SMS = provider
	})
	id := e.acceptedOrder(till, "TEA-1")
	e.sms.LoseNext(1)
	provider.down.Store(true)
	key := newKey()
	r := e.do("POST", "/orders/"+id+"/ship", till, key, `{}`)
	require.Equal(t, http.StatusServiceUnavailable, r.status, string(r.body))
	require.Len(t, e.sms.Records(), 1, "the text was sent once, then only asked about")
	scope := saga.Scope{Tenant: till.tenant, Actor: till.actor}
	k, err := e.svc.Client().KeyGet(t.Context(), scope, key)
	require.NoError(t, err)
	require.Equal(t, phases.CallOutcomeUnknown, k.Calls[len(k.Calls)-1].Outcome)

	provider.down.Store(false)
	_, err = e.db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = $1`, key)
	require.NoError(t, err)
	res, err := e.svc.Client().Resume(t.Context(), scope, key, &saga.ResumeOpts{Due: true})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.Response.Status, string(res.Response.Body))
	require.Equal(t, 1, e.sms.Count(shipReference(till, key, "customer_texted")))
	require.Len(t, e.sms.Records(), 1, "the resume found the message instead of sending another")
	require.Equal(t, 1, e.partner.Count(shipReference(till, key, "partner_notified")))
}
