package shop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/gateway/sms"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// Order statuses.
const (
	// OrderAccepted: submitted at the price list's price; it may ship.
	OrderAccepted = "accepted"
	// OrderHeld: submitted at a price that is not the price list's; held for a person to
	// review, never repriced and never shipped.
	OrderHeld = "held"
	// OrderShipped: shipped, the customer texted and the partner told.
	OrderShipped = "shipped"
)

// Order is an order as the shop keeps it: the price the client submitted, and the price list's
// when it was submitted.
type Order struct {
	ID           string `json:"id"`
	SKU          string `json:"sku"`
	Quantity     int64  `json:"quantity"`
	UnitPrice    int64  `json:"unit_price"`
	CurrentPrice int64  `json:"current_price"`
	Total        int64  `json:"total"`
	Phone        string `json:"phone"`
	Status       string `json:"status"`
}

type orderParams struct {
	SKU       string `json:"sku"`
	Quantity  int64  `json:"quantity"`
	UnitPrice int64  `json:"unit_price"`
	Phone     string `json:"phone"`
}

// parseOrder checks an order's body: a product, a quantity and a unit price above 0, and the
// customer's number in E.164 form.
func parseOrder(body []byte) (*orderParams, error) {
	var p orderParams
	if err := decodeBody(body, &p); err != nil {
		return nil, err
	}
	switch {
	case !validName(p.SKU):
		return nil, errors.New("sku is required: 1-64 characters, no slash")
	case p.Quantity <= 0 || p.Quantity > 1_000_000:
		return nil, errors.New("quantity must be a whole number from 1 to 1000000")
	case p.UnitPrice <= 0 || p.UnitPrice > 1_000_000_000:
		return nil, errors.New("unit_price must be a whole number of minor units from 1 to 1000000000")
	case !sms.ValidNumber(p.Phone):
		return nil, errors.New("phone must be a number in E.164 form, such as +14155550100")
	}
	return &p, nil
}

// Event types the shop emits through the outbox.
const (
	// EventOrderHeld: an order was held for review (its payload: order_id, sku,
	// submitted_price, current_price). Emitted in the transaction that holds it.
	EventOrderHeld = "order.held"
	// EventOrderShipped: an order shipped (its payload: order_id, sku, quantity). Emitted in the
	// transaction that ships it.
	EventOrderShipped = "order.shipped"
)

// submitOrder is POST /orders, one transaction. The client's price is checked against the
// price list at submission, and never replaced: the same price accepts the order (201); another
// price holds it for review, writing the order as held and emitting order.held in the same
// transaction, and answers 409 price_changed with the current price. That answer is stored with
// the key: a retry replays it byte for byte whatever the price list says by then.
func (s *Service) submitOrder() *phases.Operation {
	return &phases.Operation{
		Name: OpSubmitOrder,
		Validate: func(body []byte) error {
			_, err := parseOrder(body)
			return err
		},
		Steps: []phases.Step{phases.Atomic("submitted", s.placeOrder)},
	}
}

// placeOrder is submit_order's phase.
func (s *Service) placeOrder(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
	p, err := parseOrder(run.Body())
	if err != nil {
		return phases.Permanent(err)
	}
	o := Order{ID: run.IntentID("ord"), SKU: p.SKU, Quantity: p.Quantity, UnitPrice: p.UnitPrice,
		Total: p.Quantity * p.UnitPrice, Phone: p.Phone}
	// The row lock keeps the price read here the price list's until this order commits.
	err = tx.QueryRow(ctx, `SELECT price FROM shop_products WHERE tenant_id = $1 AND sku = $2 FOR SHARE`,
		run.Tenant(), p.SKU).Scan(&o.CurrentPrice)
	if errors.Is(err, pgx.ErrNoRows) {
		return phases.Reject(http.StatusNotFound, CodeNotFound, fmt.Sprintf("no such product: %s", p.SKU))
	} else if err != nil {
		return err
	}
	o.Status = OrderAccepted
	if o.CurrentPrice != o.UnitPrice {
		o.Status = OrderHeld
	}
	// The id derives from the intent: an order placed by an earlier execution of it whose key
	// is gone (deleted after its retention) is answered as it stands, not placed again.
	var placed bool
	err = tx.QueryRow(ctx, `WITH placed AS (
			INSERT INTO shop_orders (id, tenant_id, sku, quantity, unit_price, current_price, phone, status)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (id) DO NOTHING RETURNING status, current_price)
		SELECT status, current_price, true FROM placed
		UNION ALL
		SELECT status, current_price, false FROM shop_orders
		WHERE id = $1 AND tenant_id = $2 AND sku = $3 AND quantity = $4 AND unit_price = $5 AND phone = $7
			AND NOT EXISTS (SELECT FROM placed)`,
		o.ID, run.Tenant(), o.SKU, o.Quantity, o.UnitPrice, o.CurrentPrice, o.Phone, o.Status).Scan(&o.Status, &o.CurrentPrice, &placed)
	if errors.Is(err, pgx.ErrNoRows) {
		return phases.Reject(http.StatusUnprocessableEntity, saga.CodeKeyReused, "this idempotency key was used for another order")
	} else if err != nil {
		return err
	}
	if o.Status != OrderHeld {
		return run.Respond(http.StatusCreated, o)
	}
	held := map[string]any{"order_id": o.ID, "sku": o.SKU, "submitted_price": o.UnitPrice, "current_price": o.CurrentPrice}
	if placed {
		payload, err := json.Marshal(held)
		if err != nil {
			return err
		}
		err = s.cfg.Outbox.EmitTx(ctx, tx, worker.Event{ID: run.IntentID("evt"), Type: EventOrderHeld,
			Tenant: run.Tenant(), Payload: payload})
		if err != nil {
			return err
		}
	}
	return run.RespondError(http.StatusConflict, CodePriceChanged,
		fmt.Sprintf("the price of %s is %d, not %d: the order is held for review", o.SKU, o.CurrentPrice, o.UnitPrice), held)
}

// getOrder is GET /orders/{id}: the order as it stands.
func (s *Service) getOrder(w http.ResponseWriter, r *http.Request, scope saga.Scope) {
	o, err := readOrder(r.Context(), s.cfg.Pool, scope.Tenant, r.PathValue("id"))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such order")
	case err != nil:
		s.unavailable(w, r, err)
	default:
		writeJSON(w, http.StatusOK, o)
	}
}

// querier is what reading an order needs: a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readOrder reads an order of tenant's.
func readOrder(ctx context.Context, q querier, tenant, id string) (*Order, error) {
	o := &Order{ID: id}
	err := q.QueryRow(ctx, `SELECT sku, quantity, unit_price, current_price, phone, status
		FROM shop_orders WHERE id = $1 AND tenant_id = $2`, id, tenant).Scan(
		&o.SKU, &o.Quantity, &o.UnitPrice, &o.CurrentPrice, &o.Phone, &o.Status)
	o.Total = o.Quantity * o.UnitPrice
	return o, err
}
