package shop_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
)

const countBody = `{"sku":"TEA-1","day":"2026-03-02","quantity":12}`

// A stock count is posted once per intent: the retry replays the stored answer byte for byte.
func TestStockCountIsPostedOncePerIntent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	first := e.do("POST", "/locations/north/counts", till, key, countBody)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	id := phases.IntentID(till.tenant, till.actor, key, "cnt")
	require.JSONEq(t, `{"id":"`+id+`","location":"north","sku":"TEA-1","day":"2026-03-02","quantity":12}`, string(first.body))

	again := e.do("POST", "/locations/north/counts", till, key, countBody)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, again.body)
	require.Equal(t, 1, e.count(`SELECT count(*) FROM shop_stock_counts WHERE id = $1 AND counted_by = $2`, id, till.actor))
}

// A second intent for the same location, product and day is refused by the unique constraint:
// a 409 conflict naming it, stored and replayed; another day, location or tenant is a new
// count.
func TestSecondCountOfAShelfAndDayIsAStoredConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	require.Equal(t, http.StatusCreated, e.do("POST", "/locations/north/counts", till, newKey(), countBody).status)

	key := newKey()
	second := e.do("POST", "/locations/north/counts", till, key, strings.Replace(countBody, "12", "13", 1))
	require.Equal(t, http.StatusConflict, second.status, string(second.body))
	require.Equal(t, "conflict", second.code(t))
	require.Contains(t, second.json(t)["message"], "shop_stock_count_once_per_day")
	require.Equal(t, "application/problem+json", second.header.Get("Content-Type"))
	again := e.do("POST", "/locations/north/counts", till, key, strings.Replace(countBody, "12", "13", 1))
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"), "the conflict is stored")
	require.Equal(t, second.body, again.body)

	require.Equal(t, http.StatusCreated, e.do("POST", "/locations/north/counts", till, newKey(), strings.Replace(countBody, "03-02", "03-03", 1)).status)
	require.Equal(t, http.StatusCreated, e.do("POST", "/locations/south/counts", till, newKey(), countBody).status)
	require.Equal(t, http.StatusCreated, e.do("POST", "/locations/north/counts", other, newKey(), countBody).status)
	require.Equal(t, 4, e.count(`SELECT count(*) FROM shop_stock_counts`))
}

// Invalid counts are answered 400 without claiming the key; a route value no location can be
// named is 404. Nothing is stored for either.
func TestInvalidStockCountsStoreNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for body, message := range map[string]string{
		`{"sku":"TEA-1","day":"2026-02-30","quantity":1}`:            `day "2026-02-30" is not a date`,
		`{"sku":"TEA-1","day":"2026-03-02"}`:                         "quantity is required",
		`{"sku":"TEA-1","day":"2026-03-02","quantity":-1}`:           "quantity must be 0 or more",
		`{"sku":"TEA-1","day":"2026-03-02","quantity":"1"}`:          "quantity must be a whole number",
		`{"sku":"","day":"2026-03-02","quantity":1}`:                 "sku is required",
		`{"sku":"TEA-1","day":"2026-03-02","quantity":1,"note":"x"}`: `unknown member "note"`,
	} {
		r := e.do("POST", "/locations/north/counts", till, newKey(), body)
		require.Equal(t, http.StatusBadRequest, r.status, body)
		require.Equal(t, "invalid_request", r.code(t), body)
		require.Contains(t, r.json(t)["message"], message, body)
	}
	r := e.do("POST", "/locations/"+strings.Repeat("n", 65)+"/counts", till, newKey(), countBody)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, http.StatusUnauthorized, e.do("POST", "/locations/north/counts", who{}, newKey(), countBody).status)
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_key`))
	require.Zero(t, e.count(`SELECT count(*) FROM shop_stock_counts`))
}
