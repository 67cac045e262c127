package shop_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/pgsaga/pgsaga/examples/shop"
	"github.com/pgsaga/pgsaga/gateway/sms/smssim"
	"github.com/pgsaga/pgsaga/gateway/webhook"
	"github.com/pgsaga/pgsaga/gateway/webhook/webhooksim"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// A till submits an order at the price it knew; the price list changed meanwhile. The order is
// held for review and answered 409 price_changed with the current price; a second count of the
// same shelf on the same day is a stored 409 conflict.
func Example() {
	ctx := context.Background()
	db, err := sagatest.OpenDB(ctx, "shop_example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	// A service migrates at start (a no-op here: the test binary's template is migrated).
	if _, err := migrations.Migrate(ctx, db.Pool, shop.Migrations()); err != nil {
		fmt.Println(err)
		return
	}
	partner := httptest.NewServer(webhooksim.New(nil))
	defer partner.Close()
	partnerClient, err := webhook.New(&webhook.Config{URL: partner.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	svc, err := shop.New(&shop.Config{Pool: db.Pool, SMS: smssim.New(nil), Partner: partnerClient})
	if err != nil {
		fmt.Println(err)
		return
	}
	api, err := svc.Handler(saga.HeaderScope)
	if err != nil {
		fmt.Println(err)
		return
	}
	send := func(method, path, key, body string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("X-Tenant-ID", "corner-shop")
		req.Header.Set("X-Actor-ID", "till-1")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body.String())
	}

	send(http.MethodPut, "/products/TEA-1", "", `{"price":450}`)
	send(http.MethodPost, "/orders", "order-0001-till-1", `{"sku":"TEA-1","quantity":2,"unit_price":400,"phone":"+14155550100"}`)
	send(http.MethodPost, "/locations/north/counts", "count-0001-till-1", `{"sku":"TEA-1","day":"2026-03-02","quantity":12}`)
	send(http.MethodPost, "/locations/north/counts", "count-0002-till-1", `{"sku":"TEA-1","day":"2026-03-02","quantity":11}`)
	// Output:
	// 200 {"sku":"TEA-1","price":450}
	// 409 {"type":"urn:pgsaga:error:price_changed","title":"Price changed","status":409,"detail":"the price of TEA-1 is 450, not 400: the order is held for review","error":"price_changed","message":"the price of TEA-1 is 450, not 400: the order is held for review","current_price":450,"order_id":"ord_cmz2d6qrmhbuqd5t5rptkq3jya","sku":"TEA-1","submitted_price":400}
	// 201 {"id":"cnt_ckqoiz6iff6grvvbr23hrwltca","location":"north","sku":"TEA-1","day":"2026-03-02","quantity":12}
	// 409 {"type":"urn:pgsaga:error:conflict","title":"Conflict","status":409,"detail":"the request conflicts with data already stored (constraint \"shop_stock_count_once_per_day\")","error":"conflict","message":"the request conflicts with data already stored (constraint \"shop_stock_count_once_per_day\")"}
}
