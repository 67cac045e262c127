package payments_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

// chaosEnv is the payments API served by a client whose operations and gateway pass through
// chaos points, so a test can kill, stall or fail an execution anywhere.
type chaosEnv struct {
	*env
	points *chaos.Points
	client *saga.Client
}

// chaosOpts shape a chaosEnv. The zero value is a well-behaved simulator reached in-process.
type chaosOpts struct {
	sim *sim.Config
	// overHTTP reaches the simulator through its HTTP adapter instead of in-process.
	overHTTP bool
	// gatewayRetries bounds the in-process retries of one charge (0: gateway.Execute's default).
	gatewayRetries uint64
	// maxAttempts is the engine's MaxAttempts (0: its default).
	maxAttempts int
	// lease is the engine's Lease (0: its default).
	lease time.Duration
	// pooled serves the API through PgBouncer in transaction pooling mode (dbtest.PooledPool);
	// the env's db.Pool, for the test's own reads and writes, stays direct.
	pooled bool
}

func newChaosEnv(t *testing.T, o chaosOpts) *chaosEnv {
	t.Helper()
	db := dbtest.NewDB(t)
	s := sim.New(o.sim)
	var gw gateway.Gateway = s.Gateway()
	if o.overHTTP {
		gwSrv := httptest.NewServer(s.Handler())
		t.Cleanup(gwSrv.Close)
		c, err := sim.NewClient(gwSrv.URL, nil)
		require.NoError(t, err)
		gw = c
	}
	points := chaos.NewPoints()
	pool := db.Pool
	if o.pooled {
		pool = db.PooledPool(t, "default_query_exec_mode=cache_describe")
	}
	svc, err := payments.New(&payments.Config{Pool: pool, TransactionPooling: o.pooled, Gateway: chaos.WrapGateway(gw, points),
		GatewayRetries: o.gatewayRetries, Lease: o.lease})
	require.NoError(t, err)
	client, err := saga.NewClient(&saga.Config{DB: pool, TransactionPooling: o.pooled, Operations: chaos.WrapOperations(svc.Operations(), points),
		MaxAttempts: o.maxAttempts, Lease: o.lease})
	require.NoError(t, err)

	// POST routes run on the wrapped client; the GET routes are the service's own.
	plain, err := svc.Handler(saga.HeaderScope)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/", plain)
	for pattern, op := range map[string]string{
		"POST /invoices":             payments.OpCreateInvoice,
		"POST /payments":             payments.OpCreatePayment,
		"POST /orders":               payments.OpCreateOrder,
		"POST /orders/{id}/complete": payments.OpCompleteOrder,
	} {
		h, err := client.Handler(op, &saga.HandlerOpts{Scope: saga.HeaderScope})
		require.NoError(t, err)
		mux.Handle(pattern, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	// Before the server closes (it waits for requests in flight): let blocked executions go.
	t.Cleanup(points.ReleaseAll)
	return &chaosEnv{env: &env{t: t, db: db, sim: s, svc: svc, srv: srv}, points: points, client: client}
}

func paymentBody(invoice string, amount int) string {
	return `{"invoice_id": "` + invoice + `", "amount": ` + itoa(amount) + `}`
}

// runDirect runs a payment on the wrapped client without HTTP, on its own goroutine, and reports
// whether it died at a crash point; res and err are set when it returned.
func (e *chaosEnv) runDirect(as who, key, body string) (crashed bool, res *saga.Result, err error) {
	crashed = crash.Run(func() {
		res, err = e.client.Run(e.t.Context(), payments.OpCreatePayment, &saga.Request{
			Scope: saga.Scope{Tenant: as.tenant, Actor: as.actor}, Key: key, Method: "POST", Path: "/payments", Body: []byte(body),
		})
	})
	return crashed, res, err
}

// key reads a key row; nil when there is none.
func (e *chaosEnv) key(as who, key string) *saga.Key {
	e.t.Helper()
	k, err := e.client.KeyGet(e.t.Context(), saga.Scope{Tenant: as.tenant, Actor: as.actor}, key)
	if err == saga.ErrKeyNotFound {
		return nil
	}
	require.NoError(e.t, err)
	return k
}

// expireLease ends a key's lease now, on the database clock, as waiting it out would.
func (e *chaosEnv) expireLease(key string) {
	e.t.Helper()
	// A call may be sent until its lease's end (its journal deadline, in the key row or in
	// pgsaga_call): that time has passed too, or gateway.Execute would rightly wait for a request
	// the dead execution may still send.
	tag, err := e.db.Pool.Exec(e.t.Context(), `UPDATE pgsaga_key SET locked_until = now() - interval '1 second',
		call_deadline = CASE WHEN call_ended_at IS NULL AND call_deadline > now() THEN now() - interval '1 second' ELSE call_deadline END
		WHERE key = $1 AND status = 'started'`, key)
	require.NoError(e.t, err)
	require.EqualValues(e.t, 1, tag.RowsAffected(), "no started key %s to expire", key)
	_, err = e.db.Pool.Exec(e.t.Context(), `UPDATE pgsaga_call SET deadline = now() - interval '1 second' WHERE key = $1 AND ended_at IS NULL AND deadline > now()`, key)
	require.NoError(e.t, err)
}

// waitUntilDue checks that a retry before the key's next attempt answers 503 with Retry-After and
// spends nothing, then moves the next attempt to now, as waiting Retry-After out would.
func (e *chaosEnv) waitUntilDue(as who, key, body string) {
	e.t.Helper()
	before := e.key(as, key)
	early := e.do("POST", "/payments", as, key, body)
	require.Equal(e.t, http.StatusServiceUnavailable, early.status, string(early.body))
	require.Equal(e.t, "temporarily_unavailable", early.code(e.t))
	require.NotEmpty(e.t, early.header.Get("Retry-After"))
	require.Equal(e.t, before.Attempts, e.key(as, key).Attempts, "a retry before the next attempt spends nothing")
	tag, err := e.db.Pool.Exec(e.t.Context(), `UPDATE pgsaga_key SET next_attempt_at = now() WHERE key = $1 AND status = 'started'`, key)
	require.NoError(e.t, err)
	require.EqualValues(e.t, 1, tag.RowsAffected(), "no started key %s", key)
}

// requirePaidOnce checks the invariants of a payment that succeeded: one charge at the gateway
// for it and no other, one payment row (succeeded, carrying that charge), and the invoice paid
// by its amount exactly once.
func (e *chaosEnv) requirePaidOnce(as who, invoice string, invoiceAmount int, payment map[string]any) {
	e.t.Helper()
	t := e.t
	id, _ := payment["id"].(string)
	require.NotEmpty(t, id)
	require.Equal(t, 1, e.sim.ChargesFor("payment:"+id), "charges for the payment")
	require.Equal(t, 1, e.sim.TotalCharges(), "charges at the gateway")
	ledger := e.sim.Ledger()
	require.Equal(t, ledger.Charges[0].ID, payment["charge_id"])
	require.Equal(t, "succeeded", payment["status"])

	list := e.do("GET", "/payments?invoice_id="+invoice, as, "", "")
	require.Equal(t, http.StatusOK, list.status)
	payments := list.json(t)["payments"].([]any)
	require.Len(t, payments, 1, "payment rows: %s", list.body)
	row := payments[0].(map[string]any)
	require.Equal(t, id, row["id"])
	require.Equal(t, "succeeded", row["status"])
	require.Equal(t, payment["charge_id"], row["charge_id"])

	inv := e.do("GET", "/invoices/"+invoice, as, "", "").json(t)
	require.Equal(t, payment["amount"], inv["paid"], "the invoice is paid by the amount, once")
	wantStatus := "open"
	if int(payment["amount"].(float64)) == invoiceAmount {
		wantStatus = "paid"
	}
	require.Equal(t, wantStatus, inv["status"])
}

// requireReplays checks that the same request now replays first's body byte for byte.
func (e *chaosEnv) requireReplays(as who, key, body string, first *reply) {
	e.t.Helper()
	again := e.do("POST", "/payments", as, key, body)
	require.Equal(e.t, first.status, again.status)
	require.Equal(e.t, first.body, again.body)
	require.Equal(e.t, "true", again.header.Get("Idempotent-Replayed"))
}

// otherProcess is a second service on the same database and gateway, without chaos points: the
// process (or worker) that takes over from a dead or paused one.
func (e *chaosEnv) otherProcess() *saga.Client {
	e.t.Helper()
	svc, err := payments.New(&payments.Config{Pool: e.db.Pool, Gateway: e.sim.Gateway()})
	require.NoError(e.t, err)
	return svc.Client()
}
