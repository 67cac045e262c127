package payments

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Order is a served order, completed into exactly one sale.
type Order struct {
	ID     string `json:"id"`
	Total  int64  `json:"total"`
	Status string `json:"status"`
}

// Sale is the result of completing an order.
type Sale struct {
	ID      string `json:"id"`
	OrderID string `json:"order_id"`
	Total   int64  `json:"total"`
}

// Completion is the answer to completing an order.
type Completion struct {
	OrderID string `json:"order_id"`
	SaleID  string `json:"sale_id"`
	Total   int64  `json:"total"`
}

func parseCreateOrder(body []byte) (int64, error) {
	var p struct {
		Total json.RawMessage `json:"total"`
	}
	if err := decodeStrict(body, &p); err != nil {
		return 0, err
	}
	return positiveAmount("total", p.Total)
}

// createOrder is a single-transaction operation: POST /orders.
func createOrder() *phases.Operation {
	return &phases.Operation{
		Name: OpCreateOrder,
		Validate: func(body []byte) error {
			_, err := parseCreateOrder(body)
			return err
		},
		Steps: []phases.Step{
			phases.Atomic("order_created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				total, err := parseCreateOrder(run.Body())
				if err != nil {
					return phases.Permanent(err)
				}
				o := Order{ID: run.IntentID("ord"), Total: total}
				// The id derives from the intent: an order made by an earlier execution of it
				// whose key is gone (deleted after its retention) is answered as it stands.
				err = tx.QueryRow(ctx, `WITH created AS (
						INSERT INTO orders (id, tenant_id, total) VALUES ($1, $2, $3)
						ON CONFLICT (id) DO NOTHING RETURNING status)
					SELECT status FROM created
					UNION ALL
					SELECT status FROM orders
					WHERE id = $1 AND tenant_id = $2 AND total = $3 AND NOT EXISTS (SELECT FROM created)`,
					o.ID, run.Tenant(), o.Total).Scan(&o.Status)
				if errors.Is(err, pgx.ErrNoRows) {
					return phases.Reject(http.StatusUnprocessableEntity, saga.CodeKeyReused,
						"this idempotency key was used for another order")
				}
				if err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, o)
			}),
		},
	}
}

// orderIDFromPath reads {id} from /orders/{id}/complete.
func orderIDFromPath(path string) string {
	rest, _ := strings.CutPrefix(path, "/orders/")
	id, _ := strings.CutSuffix(rest, "/complete")
	return id
}

// CompleteOrderTx turns a served order into its sale: a guarded transition (only a served order
// completes) plus a sale whose uniqueness per order the database enforces. It is the business
// transaction of complete_order, exported so benchmarks can run it without idempotency. saleID
// is the new sale's id (derived from the intent by complete_order).
func CompleteOrderTx(ctx context.Context, tx pgx.Tx, tenant, saleID, orderID string) (*Completion, error) {
	c := Completion{OrderID: orderID, SaleID: saleID}
	err := tx.QueryRow(ctx, `WITH completed AS (
			UPDATE orders SET status = 'completed', completed_at = now()
			WHERE id = $1 AND tenant_id = $2 AND status = 'served'
			RETURNING id, tenant_id, total)
		INSERT INTO sales (id, tenant_id, order_id, total)
		SELECT $3, tenant_id, id, total FROM completed
		RETURNING total`, orderID, tenant, c.SaleID).Scan(&c.Total)
	if errors.Is(err, pgx.ErrNoRows) {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM orders WHERE id = $1 AND tenant_id = $2`, orderID, tenant).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, phases.Reject(http.StatusNotFound, CodeNotFound, "no such order")
		}
		if err != nil {
			return nil, err
		}
		return nil, phases.Reject(http.StatusConflict, CodeOrderAlreadyCompleted, "the order was already completed")
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// completeOrder is a single-transaction operation: POST /orders/{id}/complete.
func completeOrder() *phases.Operation {
	return &phases.Operation{
		Name:     OpCompleteOrder,
		Validate: validateObject,
		Steps: []phases.Step{
			phases.Atomic("order_completed", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				c, err := CompleteOrderTx(ctx, tx, run.Tenant(), run.IntentID("sale"), orderIDFromPath(run.Path()))
				if err != nil {
					return err
				}
				return run.Respond(http.StatusOK, c)
			}),
		},
	}
}

func (s *Service) listSales(w http.ResponseWriter, r *http.Request, scope saga.Scope) {
	listUnder(s, w, r, scope, "order_id", "order", "sales",
		`SELECT s.id, o.id, s.total
		FROM orders o LEFT JOIN sales s ON s.order_id = o.id AND s.tenant_id = o.tenant_id
		WHERE o.id = $1 AND o.tenant_id = $2 ORDER BY s.created_at`,
		func(row pgx.Row) (Sale, bool, error) {
			var (
				sale  Sale
				id    *string
				total *int64
			)
			err := row.Scan(&id, &sale.OrderID, &total)
			if err != nil || id == nil {
				return sale, false, err
			}
			sale.ID, sale.Total = *id, *total
			return sale, true, nil
		})
}
