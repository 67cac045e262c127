package payments_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
)

func TestPaymentHappyPathAndReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	inv := e.createInvoice(alice, 5000)
	key := newKey()
	body := `{"invoice_id": "` + inv + `", "amount": 2000}`

	first := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	p := first.json(t)
	require.Equal(t, "succeeded", p["status"])
	require.NotEmpty(t, p["charge_id"])

	again := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, first.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, e.sim.ChargesFor("payment:"+p["id"].(string)))

	invoice := e.do("GET", "/invoices/"+inv, alice, "", "")
	require.Equal(t, float64(2000), invoice.json(t)["paid"])
	require.Equal(t, "open", invoice.json(t)["status"])

	over := e.do("POST", "/payments", alice, newKey(), `{"invoice_id": "`+inv+`", "amount": 3001}`)
	require.Equal(t, http.StatusUnprocessableEntity, over.status)
	require.Equal(t, "amount_exceeds_balance", over.code(t))

	rest := e.do("POST", "/payments", alice, newKey(), `{"invoice_id": "`+inv+`", "amount": 3000}`)
	require.Equal(t, http.StatusCreated, rest.status)
	invoice = e.do("GET", "/invoices/"+inv, alice, "", "")
	require.Equal(t, "paid", invoice.json(t)["status"])

	list := e.do("GET", "/payments?invoice_id="+inv, alice, "", "")
	require.Len(t, list.json(t)["payments"], 2)
	require.Equal(t, 2, e.count(`SELECT count(*) FROM payments`))
}

// A declined charge is a stored outcome (402, replayed), leaves the payment as declined, and
// gives its reservation back: the whole balance can still be paid.
func TestDeclineIsStoredAndReleasesTheReservation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, err := e.sim.SetFaults(func(s *sim.Settings) { s.DeclineOver = 3000 })
	require.NoError(t, err)
	inv := e.createInvoice(alice, 5000)
	key := newKey()
	body := `{"invoice_id": "` + inv + `", "amount": 4000}`

	declined := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, http.StatusPaymentRequired, declined.status, string(declined.body))
	require.Equal(t, "card_declined", declined.code(t))
	again := e.do("POST", "/payments", alice, key, body)
	require.Equal(t, declined.body, again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))

	list := e.do("GET", "/payments?invoice_id="+inv, alice, "", "").json(t)["payments"].([]any)
	require.Len(t, list, 1)
	require.Equal(t, "declined", list[0].(map[string]any)["status"])
	require.NotEmpty(t, list[0].(map[string]any)["charge_id"])

	_, err = e.sim.SetFaults(func(s *sim.Settings) { s.DeclineOver = 0 })
	require.NoError(t, err)
	paid := e.do("POST", "/payments", alice, newKey(), `{"invoice_id": "`+inv+`", "amount": 5000}`)
	require.Equal(t, http.StatusCreated, paid.status, "the declined amount is no longer reserved: %s", paid.body)
	invoice := e.do("GET", "/invoices/"+inv, alice, "", "").json(t)
	require.Equal(t, "paid", invoice["status"])
	require.Equal(t, float64(5000), invoice["paid"])
	require.Equal(t, 2, e.sim.TotalCharges(), "one declined charge, one succeeded")
}
