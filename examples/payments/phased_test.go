package payments_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
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
