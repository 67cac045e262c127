package shop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/worker"
)

// Shipment is the answer to shipping an order: the text the customer was sent and the
// partner's acknowledgement of its delivery.
type Shipment struct {
	OrderID       string `json:"order_id"`
	Status        string `json:"status"`
	MessageID     string `json:"message_id"`
	MessageStatus string `json:"message_status"`
	DeliveryID    string `json:"delivery_id"`
}

// shippedOrder is what the order_shipped phase read of the order, for the calls after it.
type shippedOrder struct {
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
	Phone    string `json:"phone"`
}

// PartnerNotice is the document the partner receives for a shipped order.
type PartnerNotice struct {
	Event    string `json:"event"`
	OrderID  string `json:"order_id"`
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
}

// The values ship_order's steps save for the steps after them.
var (
	shipped   = phases.Value[shippedOrder]("order")
	texted    = phases.Value[sms.Message]("text")
	delivered = phases.Value[webhook.Delivery]("delivery")
)

// shipOrder is POST /orders/{id}/ship, phased:
//
//  1. order_shipped (a transaction): the guarded move of an accepted order to shipped, with the
//     order.shipped event emitted in the same transaction;
//  2. customer_texted (a call): one text through the SMS provider, which has no idempotency
//     keys but can be asked by reference what it sent: after a lost answer or a crash the call
//     asks before it sends again, and takes the message it finds;
//  3. partner_notified (a call): one delivery to the partner, which de-duplicates by the
//     delivery's Idempotency-Key: after a lost answer or a crash the same key is sent again;
//  4. shipment_recorded (a transaction): the shipment row and the answer, 201.
//
// Both calls send the reference the engine journals before they are sent (phases'
// DefaultReference, derived from the intent): every attempt, and every execution of the
// intent, sends the same one. Every step reads the order's id from the route
// (run.PathValue("id")), which the key keeps for the worker's resume.
func (s *Service) shipOrder() *phases.Operation {
	return &phases.Operation{
		Name: OpShipOrder,
		Validate: func(body []byte) error {
			return decodeBody(body, &struct{}{})
		},
		Steps: []phases.Step{
			phases.Atomic("order_shipped", s.markShipped),
			phases.Call("customer_texted", s.textCustomer),
			phases.Call("partner_notified", s.notifyPartner),
			phases.Atomic("shipment_recorded", recordShipment),
		},
	}
}

// markShipped is the order_shipped phase.
func (s *Service) markShipped(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
	id := run.PathValue("id")
	var o shippedOrder
	err := tx.QueryRow(ctx, `UPDATE shop_orders SET status = 'shipped', shipped_at = now()
		WHERE id = $1 AND tenant_id = $2 AND status = 'accepted'
		RETURNING sku, quantity, phone`, id, run.Tenant()).Scan(&o.SKU, &o.Quantity, &o.Phone)
	if errors.Is(err, pgx.ErrNoRows) {
		return whyNotShipped(ctx, tx, run.Tenant(), id)
	} else if err != nil {
		return err
	}
	payload, err := json.Marshal(PartnerNotice{Event: EventOrderShipped, OrderID: id, SKU: o.SKU, Quantity: o.Quantity})
	if err != nil {
		return err
	}
	err = s.cfg.Outbox.EmitTx(ctx, tx, worker.Event{ID: run.IntentID("evt"), Type: EventOrderShipped,
		Tenant: run.Tenant(), Payload: payload})
	if err != nil {
		return err
	}
	return shipped.Set(run, o)
}

// whyNotShipped says why an order did not move to shipped: there is no such order, it is held
// for review, or it shipped already (under another key).
func whyNotShipped(ctx context.Context, tx pgx.Tx, tenant, id string) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM shop_orders WHERE id = $1 AND tenant_id = $2`, id, tenant).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return phases.Reject(http.StatusNotFound, CodeNotFound, "no such order")
	case err != nil:
		return err
	case status == OrderHeld:
		return phases.Reject(http.StatusConflict, CodeOrderHeld, "the order is held for review and cannot ship")
	}
	return phases.Reject(http.StatusConflict, CodeOrderAlreadyShipped, "the order has shipped already")
}

// textCustomer is the customer_texted call.
func (s *Service) textCustomer(ctx context.Context, run *phases.Run) error {
	o, err := shipped.Get(run)
	if err != nil {
		return err
	}
	// The run is the call's journal: Send learns from it whether an earlier attempt may have
	// reached the provider (then it asks by reference first), and records what this one did.
	msg, err := sms.Send(ctx, run, s.cfg.SMS, sms.Params{
		To:        o.Phone,
		Text:      fmt.Sprintf("Your order %s (%d x %s) has shipped.", run.PathValue("id"), o.Quantity, o.SKU),
		Reference: run.Reference(), IdempotencyKey: run.Reference(),
	}, nil)
	if err != nil {
		return err
	}
	return texted.Set(run, *msg)
}

// notifyPartner is the partner_notified call.
func (s *Service) notifyPartner(ctx context.Context, run *phases.Run) error {
	o, err := shipped.Get(run)
	if err != nil {
		return err
	}
	// The same value encodes to the same bytes on every attempt, as a partner that compares a
	// re-sent key's body with the first one's requires.
	body, err := json.Marshal(PartnerNotice{Event: EventOrderShipped, OrderID: run.PathValue("id"), SKU: o.SKU, Quantity: o.Quantity})
	if err != nil {
		return err
	}
	d, err := webhook.Deliver(ctx, run, s.cfg.Partner, webhook.Params{Key: run.Reference(), Body: body}, nil)
	if err != nil {
		return err
	}
	return delivered.Set(run, *d)
}

// recordShipment is the shipment_recorded phase.
func recordShipment(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
	msg, err := texted.Get(run)
	if err != nil {
		return err
	}
	d, err := delivered.Get(run)
	if err != nil {
		return err
	}
	sh := Shipment{OrderID: run.PathValue("id"), Status: OrderShipped, MessageID: msg.ID, MessageStatus: string(msg.Status),
		DeliveryID: d.ID}
	_, err = tx.Exec(ctx, `INSERT INTO shop_shipments (order_id, tenant_id, message_id, message_status, delivery_id)
		VALUES ($1, $2, $3, $4, $5)`, sh.OrderID, run.Tenant(), sh.MessageID, sh.MessageStatus, sh.DeliveryID)
	if err != nil {
		return err
	}
	return run.Respond(http.StatusCreated, sh)
}
