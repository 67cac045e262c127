package payments_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
)

// countingService is a payments service whose pool records every statement it sends.
type countingService struct {
	svc     *payments.Service
	counter *chaos.Counter
	sim     *sim.Simulator
	points  *chaos.Points
	scope   saga.Scope
}

func newCountingService(t *testing.T) *countingService {
	t.Helper()
	db := dbtest.NewDB(t)
	counter := &chaos.Counter{}
	pool, err := chaos.CountingPool(t.Context(), db.URL, 4, counter)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := sim.New(nil)
	points := chaos.NewPoints()
	svc, err := payments.New(&payments.Config{Pool: pool, Gateway: chaos.WrapGateway(s.Gateway(), points)})
	require.NoError(t, err)
	return &countingService{svc: svc, counter: counter, sim: s, points: points, scope: saga.Scope{Tenant: "tenant-1", Actor: "alice"}}
}

// expireLease ends a key's lease now, on the database clock, as waiting it out would.
func (c *countingService) expireLease(t *testing.T, key string) {
	t.Helper()
	_, err := c.svc.Client().Config().DB.Exec(t.Context(), `UPDATE pgsaga_key SET locked_until = now() - interval '1 second' WHERE key = $1`, key)
	require.NoError(t, err)
}

// run runs one request through the engine (no HTTP: the handler sends no statements of its own).
func (c *countingService) run(t *testing.T, op, key, path, body string) *saga.Result {
	t.Helper()
	res, err := c.svc.Client().Run(t.Context(), op, &saga.Request{Scope: c.scope, Key: key, Method: "POST", Path: path, Body: []byte(body)})
	require.NoError(t, err)
	return res
}

func (c *countingService) id(t *testing.T, res *saga.Result) string {
	t.Helper()
	var v struct{ ID string }
	require.NoError(t, json.Unmarshal(res.Response.Body, &v))
	require.NotEmpty(t, v.ID, string(res.Response.Body))
	return v.ID
}

// requireTrips checks that exactly the round trips want were sent, in order. Each is written as
// its statements joined by " + ", each statement given by how it begins. It prints what was sent
// when they differ.
func requireTrips(t *testing.T, got []chaos.Trip, want ...string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		stmts := strings.Split(want[i], " + ")
		ok = len(stmts) == len(got[i])
		for j := 0; ok && j < len(stmts); j++ {
			ok = strings.HasPrefix(got[i][j], stmts[j])
		}
	}
	if !ok {
		var b strings.Builder
		for _, trip := range got {
			b.WriteString("\n  " + trip.String())
		}
		t.Fatalf("want %d round trips:\n  %s\ngot %d (%d statements):%s", len(want), strings.Join(want, "\n  "), len(got), chaos.Statements(got), b.String())
	}
}

// The round-trip budget of each kind of request. Every statement is counted (BEGIN, COMMIT and
// ROLLBACK included); statements pgx pipelines in one batch make one round trip, written here
// joined by " + ". pgx prepares each distinct statement once per connection; those prepares are
// not counted. The counts are deterministic, so they are asserted exactly: a change in the
// engine's cost fails this test and has to be explained here.
//
// A phase runs in a lazy transaction (internal/pgpipe): its BEGIN travels with its first
// statement and its COMMIT with the key's write, so a phase costs its own statements plus one
// round trip. The key is read alone before a request's first phase, with no transaction, so that
// a retry is answered in that one round trip.
func TestRoundTripBudget(t *testing.T) {
	t.Parallel()
	c := newCountingService(t)
	order := c.id(t, c.run(t, payments.OpCreateOrder, newKey(), "/orders", `{"total": 1200}`))
	invoice := c.id(t, c.run(t, payments.OpCreateInvoice, newKey(), "/invoices", `{"amount": 5000, "currency": "USD"}`))
	c.counter.Take()

	t.Run("single transaction", func(t *testing.T) {
		key := newKey()
		res := c.run(t, payments.OpCompleteOrder, key, "/orders/"+order+"/complete", `{}`)
		require.Equal(t, 200, res.Response.Status)
		// The bare business transaction is BEGIN, the statement, COMMIT: three round trips (by
		// hand, with the key: five). The engine spends three: the read of the key, alone; the
		// business statement with BEGIN; the claim (the key stored completed, with its
		// response) with COMMIT.
		requireTrips(t, c.counter.Take(),
			"SELECT operation, method, path",            // is the key there already? no
			"begin + WITH completed AS ( UPDATE orders", // BEGIN and the business statement (CompleteOrderTx)
			"INSERT INTO pgsaga_key + commit",           // the claim, storing the key completed
		)

		// The replay of that completed key: answered from the read, nothing written, no
		// transaction: one round trip.
		res = c.run(t, payments.OpCompleteOrder, key, "/orders/"+order+"/complete", `{}`)
		require.True(t, res.Replayed)
		requireTrips(t, c.counter.Take(),
			"SELECT operation, method, path", // the key: completed, same fingerprint
		)
	})

	t.Run("phased payment", func(t *testing.T) {
		key := newKey()
		body := `{"invoice_id": "` + invoice + `", "amount": 2000}`
		res := c.run(t, payments.OpCreatePayment, key, "/payments", body)
		require.Equal(t, 201, res.Response.Status, string(res.Response.Body))
		// Two atomic phases around the charge. The engine's statements are one per phase (the
		// claim, then the fenced completion), each riding with its phase's COMMIT, plus the read
		// of the key.
		requireTrips(t, c.counter.Take(),
			"SELECT operation, method, path", // the key is new
			// payment_created
			"begin + WITH reserved AS ( UPDATE invoices", // business: reserve the amount, insert the pending payment
			"INSERT INTO pgsaga_key + commit",            // the claim at recovery point payment_created, journaling the charge in the key row
			// charged: the gateway call, no statement
			// result_recorded
			"begin + WITH settled AS ( UPDATE payments",                         // business: settle the payment and the invoice
			"WITH k AS ( UPDATE pgsaga_key r SET status = 'completed' + commit", // the fenced completion with the response and the charge's outcome
		)

		res = c.run(t, payments.OpCreatePayment, key, "/payments", body)
		require.True(t, res.Replayed)
		requireTrips(t, c.counter.Take(),
			"SELECT operation, method, path",
		)
	})

	t.Run("resume after a crash during the charge", func(t *testing.T) {
		key := newKey()
		body := `{"invoice_id": "` + invoice + `", "amount": 1000}`
		c.points.Crash(chaos.ChargeAfter) // the charge reaches the provider, then the process dies
		require.True(t, crash.Run(func() { c.run(t, payments.OpCreatePayment, key, "/payments", body) }))
		c.expireLease(t, key)
		c.counter.Take()

		res, err := c.svc.Client().Resume(t.Context(), c.scope, key, nil)
		require.NoError(t, err)
		require.Equal(t, 201, res.Response.Status, string(res.Response.Body))
		// Resume takes the key over in one statement (whose WHERE also leaves keys of operations
		// this client lacks alone). The key's recovery point comes right before the charge, so
		// the same statement journals the charge's new attempt under the new lease: the call
		// needs no write of its own before it is sent.
		requireTrips(t, c.counter.Take(),
			"WITH t AS ( UPDATE pgsaga_key", // takeover: new lease and fencing token, the charge's journal row, returning the key
			// charged: the inquiry finds the charge; no statement
			"begin + WITH settled AS ( UPDATE payments",
			"WITH k AS ( UPDATE pgsaga_key r SET status = 'completed' + commit",
		)
		require.Equal(t, 1, c.sim.ChargesFor("payment:"+c.id(t, res)))
	})

	t.Run("client retry after a crash during the charge", func(t *testing.T) {
		key := newKey()
		body := `{"invoice_id": "` + invoice + `", "amount": 1000}`
		c.points.Crash(chaos.ChargeAfter)
		require.True(t, crash.Run(func() { c.run(t, payments.OpCreatePayment, key, "/payments", body) }))
		c.expireLease(t, key)
		c.counter.Take()

		res := c.run(t, payments.OpCreatePayment, key, "/payments", body)
		require.Equal(t, 201, res.Response.Status, string(res.Response.Body))
		require.True(t, res.Resumed)
		requireTrips(t, c.counter.Take(),
			"SELECT operation, method, path", // the key: started, its lease expired
			"WITH t AS ( UPDATE pgsaga_key",  // takeover, journaling the charge
			"begin + WITH settled AS ( UPDATE payments",
			"WITH k AS ( UPDATE pgsaga_key r SET status = 'completed' + commit",
		)
		require.Equal(t, 1, c.sim.ChargesFor("payment:"+c.id(t, res)))
	})
}
