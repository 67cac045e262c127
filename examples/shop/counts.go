package shop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// StockCount is a count of one product on the shelves of one location, on one day.
type StockCount struct {
	ID       string `json:"id"`
	Location string `json:"location"`
	SKU      string `json:"sku"`
	Day      string `json:"day"`
	Quantity int64  `json:"quantity"`
}

type stockCountParams struct {
	SKU      string `json:"sku"`
	Day      string `json:"day"`
	Quantity *int64 `json:"quantity"`
}

// parseStockCount checks a count's body: a product, a day (YYYY-MM-DD) and a quantity of at
// least 0.
func parseStockCount(body []byte) (*stockCountParams, error) {
	var p stockCountParams
	if err := decodeBody(body, &p); err != nil {
		return nil, err
	}
	switch {
	case !validName(p.SKU):
		return nil, errors.New("sku is required: 1-64 characters, no slash")
	case p.Day == "":
		return nil, errors.New("day is required, as YYYY-MM-DD")
	case p.Quantity == nil:
		return nil, errors.New("quantity is required")
	case *p.Quantity < 0:
		return nil, errors.New("quantity must be 0 or more")
	}
	if _, err := time.Parse(time.DateOnly, p.Day); err != nil {
		return nil, fmt.Errorf("day %q is not a date as YYYY-MM-DD", p.Day)
	}
	return &p, nil
}

// postStockCount is POST /locations/{location}/counts, one transaction: the claim of the key,
// the count and the stored answer commit together. A count is posted once per intent (its id
// derives from the idempotency key) and once per location, product and day: the database's
// unique constraint shop_stock_count_once_per_day refuses a second intent's count, which the
// engine answers with a stored 409 conflict naming the constraint.
func postStockCount() *phases.Operation {
	return &phases.Operation{
		Name: OpPostStockCount,
		Validate: func(body []byte) error {
			_, err := parseStockCount(body)
			return err
		},
		Steps: []phases.Step{phases.Atomic("counted", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			p, err := parseStockCount(run.Body())
			if err != nil {
				return phases.Permanent(err)
			}
			c := StockCount{ID: run.IntentID("cnt"), Location: run.PathValue("location"), SKU: p.SKU, Day: p.Day, Quantity: *p.Quantity}
			if c.Location == "" {
				return phases.Reject(http.StatusNotFound, CodeNotFound, "the request names no location")
			}
			// The count's id derives from the intent: a count made by an earlier execution of
			// it whose key is gone (deleted after its retention) is answered as it stands.
			var same bool
			err = tx.QueryRow(ctx, `WITH posted AS (
					INSERT INTO shop_stock_counts (id, tenant_id, location, sku, day, quantity, counted_by)
					VALUES ($1, $2, $3, $4, $5, $6, $7)
					ON CONFLICT (id) DO NOTHING RETURNING true)
				SELECT true FROM posted
				UNION ALL
				SELECT location = $3 AND sku = $4 AND day = $5::date AND quantity = $6 FROM shop_stock_counts
				WHERE id = $1 AND tenant_id = $2 AND NOT EXISTS (SELECT FROM posted)`,
				c.ID, run.Tenant(), c.Location, c.SKU, c.Day, c.Quantity, run.Actor()).Scan(&same)
			switch {
			case errors.Is(err, pgx.ErrNoRows) || (err == nil && !same):
				return phases.Reject(http.StatusUnprocessableEntity, saga.CodeKeyReused, "this idempotency key was used for another stock count")
			case err != nil:
				return err
			}
			return run.Respond(http.StatusCreated, c)
		})},
	}
}
