package phases_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// An order submitted with the client's price is re-validated: when the price changed, the order
// is written as held for review and the answer is 409 price_changed with the current price. The
// phase's writes commit with that answer, and a retry replays it byte for byte, also after the
// price changes back: the order is never silently repriced, nor accepted later.
func ExampleRun_RespondError() {
	ctx := context.Background()
	db, err := sagatest.OpenDB(ctx, "example_respond_error")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE prices (sku text PRIMARY KEY, price bigint NOT NULL);
		CREATE TABLE orders (id text PRIMARY KEY, sku text NOT NULL, price bigint NOT NULL, status text NOT NULL);
		INSERT INTO prices VALUES ('tea', 450)`); err != nil {
		fmt.Println(err)
		return
	}

	submit := &phases.Operation{Name: "submit_order", Steps: []phases.Step{
		phases.Atomic("submitted", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			var in struct {
				SKU   string `json:"sku"`
				Price int64  `json:"price"`
			}
			if err := run.Decode(&in); err != nil {
				return phases.Reject(http.StatusBadRequest, "invalid_request", "the body is not an order")
			}
			var current int64
			if err := tx.QueryRow(ctx, `SELECT price FROM prices WHERE sku = $1`, in.SKU).Scan(&current); errors.Is(err, pgx.ErrNoRows) {
				return phases.Reject(http.StatusNotFound, "not_found", "no such product")
			} else if err != nil {
				return err
			}
			id, status := run.IntentID("ord"), "accepted"
			if current != in.Price {
				status = "held"
			}
			if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES ($1, $2, $3, $4)`, id, in.SKU, in.Price, status); err != nil {
				return err
			}
			if status == "held" {
				return run.RespondError(http.StatusConflict, "price_changed", "the price changed; the order is held for review",
					map[string]any{"order_id": id, "current_price": current})
			}
			return run.Respond(http.StatusCreated, map[string]any{"id": id, "status": status})
		}),
	}}
	client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{submit}})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &saga.Request{Scope: saga.Scope{Tenant: "acme", Actor: "till-3"}, Key: "order-0001-offline",
		Method: "POST", Path: "/orders", Body: []byte(`{"sku":"tea","price":400}`)}
	for _, price := range []int{450, 400} {
		if _, err := db.Pool.Exec(ctx, `UPDATE prices SET price = $1`, price); err != nil {
			fmt.Println(err)
			return
		}
		res, err := client.Run(ctx, "submit_order", req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Response.Status, res.Response.Header.Get("Content-Type"), "replayed:", res.Replayed)
		fmt.Println(string(res.Response.Body))
	}
	var status string
	_ = db.Pool.QueryRow(ctx, `SELECT status FROM orders`).Scan(&status)
	fmt.Println("order:", status)
	// Output:
	// 409 application/problem+json replayed: false
	// {"type":"urn:pgsaga:error:price_changed","title":"Price changed","status":409,"detail":"the price changed; the order is held for review","error":"price_changed","message":"the price changed; the order is held for review","current_price":450,"order_id":"ord_osdixwh2qngtqyh2tsxgkgkifq"}
	// 409 application/problem+json replayed: true
	// {"type":"urn:pgsaga:error:price_changed","title":"Price changed","status":409,"detail":"the price changed; the order is held for review","error":"price_changed","message":"the price changed; the order is held for review","current_price":450,"order_id":"ord_osdixwh2qngtqyh2tsxgkgkifq"}
	// order: held
}

// A handler mounted on a pattern with wildcards keeps their values with the key: every step
// reads them with PathValue, also the worker's resume, which has no HTTP request.
func ExampleRun_PathValue() {
	ctx := context.Background()
	db, err := sagatest.OpenDB(ctx, "example_path_value")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	ship := &phases.Operation{Name: "ship_order", Steps: []phases.Step{
		phases.Atomic("shipped", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusOK, map[string]string{"order_id": run.PathValue("id"), "status": "shipped"})
		}),
	}}
	client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{ship}})
	if err != nil {
		fmt.Println(err)
		return
	}
	handler, err := client.Handler("ship_order", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) {
		return saga.Scope{Tenant: "acme", Actor: "warehouse"}, nil // from authentication, in a real service
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/ship", handler)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders/ord_42/ship", bytes.NewBufferString(`{}`))
	req.Header.Set("Idempotency-Key", "ship-ord_42-0001")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"order_id":"ord_42","status":"shipped"}
}
