package shop_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
)

// An order at the price list's price is accepted.
func TestOrderAtTheListPriceIsAccepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.setPrice(till, "TEA-1", 450)
	key := newKey()
	r := e.do("POST", "/orders", till, key, orderBody("TEA-1", 2, 450))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	id := phases.IntentID(till.tenant, till.actor, key, "ord")
	require.JSONEq(t, `{"id":"`+id+`","sku":"TEA-1","quantity":2,"unit_price":450,"current_price":450,"total":900,
		"phone":"+14155550100","status":"accepted"}`, string(r.body))
	got := e.do("GET", "/orders/"+id, till, "", "")
	require.Equal(t, http.StatusOK, got.status)
	require.JSONEq(t, string(r.body), string(got.body))
	require.Equal(t, http.StatusNotFound, e.do("GET", "/orders/"+id, other, "", "").status, "another tenant's order is not found")
}

// An order submitted with a price that is no longer the list's is held for review, never
// repriced: its status is written, order.held is emitted in the same transaction, and the answer
// is 409 price_changed with the current price, stored. A retry replays it byte for byte after
// the price changes again, also back to the price the client submitted: the order stays held.
func TestChangedPriceHoldsTheOrderForReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.setPrice(till, "TEA-1", 450)
	key := newKey()
	held := e.do("POST", "/orders", till, key, orderBody("TEA-1", 2, 400))
	require.Equal(t, http.StatusConflict, held.status, string(held.body))
	require.Equal(t, "application/problem+json", held.header.Get("Content-Type"))
	id := phases.IntentID(till.tenant, till.actor, key, "ord")
	require.JSONEq(t, `{"type":"urn:pgsaga:error:price_changed","title":"Price changed","status":409,
		"detail":"the price of TEA-1 is 450, not 400: the order is held for review","error":"price_changed",
		"message":"the price of TEA-1 is 450, not 400: the order is held for review",
		"order_id":"`+id+`","sku":"TEA-1","submitted_price":400,"current_price":450}`, string(held.body))
	require.Equal(t, 1, e.events("order.held", phases.IntentID(till.tenant, till.actor, key, "evt")),
		"the reviewers' event, committed with the hold")

	for _, price := range []int{500, 400} {
		e.setPrice(till, "TEA-1", price)
		again := e.do("POST", "/orders", till, key, orderBody("TEA-1", 2, 400))
		require.Equal(t, "true", again.header.Get("Idempotent-Replayed"), "price %d", price)
		require.Equal(t, held.body, again.body, "price %d: the stored answer, not a new check", price)
	}
	order := e.do("GET", "/orders/"+id, till, "", "").json(t)
	require.Equal(t, "held", order["status"])
	require.EqualValues(t, 400, order["unit_price"], "never repriced")
	require.EqualValues(t, 450, order["current_price"], "the price it was checked against")
	require.Equal(t, 1, e.count(`SELECT count(*) FROM shop_orders`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM river_job`), "one event, not one per retry")

	ship := e.do("POST", "/orders/"+id+"/ship", till, newKey(), `{}`)
	require.Equal(t, http.StatusConflict, ship.status)
	require.Equal(t, "order_held", ship.code(t), "a held order does not ship")
}

// An order for a product not on the price list is a stored 404; an invalid one is 400 and
// stores nothing.
func TestOrderRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	r := e.do("POST", "/orders", till, key, orderBody("NOPE", 1, 100))
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, "not_found", r.code(t))
	require.Equal(t, "true", e.do("POST", "/orders", till, key, orderBody("NOPE", 1, 100)).header.Get("Idempotent-Replayed"))

	for _, body := range []string{
		`{"sku":"TEA-1","quantity":0,"unit_price":450,"phone":"+14155550100"}`,
		`{"sku":"TEA-1","quantity":1,"unit_price":450,"phone":"0800 123"}`,
		`{"sku":"TEA-1","quantity":1,"unit_price":-5,"phone":"+14155550100"}`,
	} {
		r := e.do("POST", "/orders", till, newKey(), body)
		require.Equal(t, http.StatusBadRequest, r.status, body)
		require.Equal(t, "invalid_request", r.code(t), body)
	}
	require.Equal(t, 1, e.count(`SELECT count(*) FROM pgsaga_key`), "only the stored 404")
	require.Equal(t, http.StatusMethodNotAllowed, e.do("DELETE", "/orders", till, "", "").status)
	require.Equal(t, "not_found", e.do("GET", "/nowhere", till, "", "").code(t))
}
