package shop_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/shop"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// check runs sagatest.Check on the shop's operation op: crashed before and after each of its
// steps (the open transaction lost with its connection), and after its answer, recovered by
// the client's retry and by the worker's resume. Every case must end with each effect once and
// answer status.
func (e *env) check(op string, status int, request func(ctx context.Context, name string) (*saga.Request, error),
	effects func(ctx context.Context, req *saga.Request) (map[string]int, error)) {
	e.t.Helper()
	operation, ok := e.svc.Client().Operation(op)
	require.True(e.t, ok)
	report, err := sagatest.Check(e.t.Context(), &sagatest.CheckParams{
		DB: e.db.Pool, Operation: operation, Request: request, Effects: effects,
	})
	require.NoError(e.t, err)
	require.Empty(e.t, report.Failures)
	for _, c := range report.Cases {
		require.Equal(e.t, status, c.Status, "%s, recovered by %s", c.Point, c.Recovery)
	}
}

func scopeOf(as who) saga.Scope { return saga.Scope{Tenant: as.tenant, Actor: as.actor} }

// Each case counts a shelf of its own, so that the unique constraint never meets another case.
func TestStockCountIsExactlyOnceAtEveryCrashPoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.check(shop.OpPostStockCount, http.StatusCreated,
		func(_ context.Context, name string) (*saga.Request, error) {
			return &saga.Request{Scope: scopeOf(till), Key: "count-" + name, Method: "POST", Path: "/locations/north/counts",
				PathValues: map[string]string{"location": "north"},
				Body:       []byte(`{"sku":"` + name + `","day":"2026-03-02","quantity":12}`)}, nil
		},
		func(ctx context.Context, req *saga.Request) (map[string]int, error) {
			var n int
			err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM shop_stock_counts WHERE id = $1 AND location = 'north'`,
				phases.IntentID(till.tenant, till.actor, req.Key, "cnt")).Scan(&n)
			return map[string]int{"stock count": n}, err
		})
}

// orderEffects counts an order's rows and its order.held events.
func (e *env) orderEffects(ctx context.Context, req *saga.Request) (map[string]int, error) {
	var orders, held int
	id := phases.IntentID(req.Scope.Tenant, req.Scope.Actor, req.Key, "ord")
	if err := e.db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'held' AND unit_price = 400)
		FROM shop_orders WHERE id = $1`, id).Scan(&orders, &held); err != nil {
		return nil, err
	}
	out := map[string]int{"order": orders}
	if held > 0 {
		out["held order"] = held
		var events int
		err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->'event'->>'id' = $1`,
			phases.IntentID(req.Scope.Tenant, req.Scope.Actor, req.Key, "evt")).Scan(&events)
		out["order.held event"] = events
		return out, err
	}
	return out, nil
}

func TestOrderIsExactlyOnceAtEveryCrashPoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.setPrice(till, "TEA-1", 450)
	e.check(shop.OpSubmitOrder, http.StatusCreated,
		func(_ context.Context, name string) (*saga.Request, error) {
			return &saga.Request{Scope: scopeOf(till), Key: "order-" + name, Method: "POST", Path: "/orders",
				Body: []byte(orderBody("TEA-1", 2, 450))}, nil
		}, e.orderEffects)
}

// The hold for review is exactly once too: one held order, one order.held event, and the same
// stored 409 whichever way the case recovered.
func TestPriceChangedHoldIsExactlyOnceAtEveryCrashPoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.setPrice(till, "TEA-1", 450)
	e.check(shop.OpSubmitOrder, http.StatusConflict,
		func(_ context.Context, name string) (*saga.Request, error) {
			return &saga.Request{Scope: scopeOf(till), Key: "held-" + name, Method: "POST", Path: "/orders",
				Body: []byte(orderBody("TEA-1", 2, 400))}, nil
		}, e.orderEffects)
}

// Shipping texts the customer through a provider without idempotency keys: a crash after the
// text and before the next commit leaves the engine not knowing whether it went, and only the
// inquiry before a resend keeps it to one message. Each case ships an order of its own.
func TestShipmentIsExactlyOnceAtEveryCrashPoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.setPrice(till, "TEA-1", 450)
	e.check(shop.OpShipOrder, http.StatusCreated,
		func(ctx context.Context, name string) (*saga.Request, error) {
			res, err := e.svc.Client().Run(ctx, shop.OpSubmitOrder, &saga.Request{Scope: scopeOf(till),
				Key: "order-for-" + name, Method: "POST", Path: "/orders", Body: []byte(orderBody("TEA-1", 2, 450))})
			if err != nil {
				return nil, err
			}
			if res.Response.Status != http.StatusCreated {
				return nil, fmt.Errorf("the order was not accepted: %d %s", res.Response.Status, res.Response.Body)
			}
			id := phases.IntentID(till.tenant, till.actor, "order-for-"+name, "ord")
			return &saga.Request{Scope: scopeOf(till), Key: "ship-" + name, Method: "POST", Path: "/orders/" + id + "/ship",
				PathValues: map[string]string{"id": id}, Body: []byte(`{}`)}, nil
		},
		func(ctx context.Context, req *saga.Request) (map[string]int, error) {
			id := req.PathValues["id"]
			var shippedOrders, shipments, events int
			err := e.db.Pool.QueryRow(ctx, `SELECT
					(SELECT count(*) FROM shop_orders WHERE id = $1 AND status = 'shipped'),
					(SELECT count(*) FROM shop_shipments WHERE order_id = $1),
					(SELECT count(*) FROM river_job WHERE args->'event'->>'id' = $2)`,
				id, phases.IntentID(till.tenant, till.actor, req.Key, "evt")).Scan(&shippedOrders, &shipments, &events)
			return map[string]int{
				"shipped order":       shippedOrders,
				"shipment":            shipments,
				"order.shipped event": events,
				"text":                e.sms.Count(shipReference(till, req.Key, "customer_texted")),
				"partner delivery":    e.partner.Count(shipReference(till, req.Key, "partner_notified")),
			}, err
		})
}
