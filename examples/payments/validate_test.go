package payments_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// CONTRACT: numbers in bodies are compared exactly. 9007199254740993 and 9007199254740992 are one
// IEEE double but two amounts: the key used for one is refused for the other, and another
// spelling of the same amount replays.
func TestAmountsAreComparedExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	key := newKey()
	first := e.do("POST", "/invoices", alice, key, `{"amount": 9007199254740993, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, first.status, string(first.body))
	require.Contains(t, string(first.body), `"amount":9007199254740993`)

	r := e.do("POST", "/invoices", alice, key, `{"amount": 9007199254740992, "currency": "USD"}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, string(r.body))
	require.Equal(t, "idempotency_key_reused", r.code(t))

	r = e.do("POST", "/invoices", alice, key, `{"currency": "USD", "amount": 9.007199254740993e15}`)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Equal(t, string(first.body), string(r.body))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices`))
	require.Equal(t, 1, e.count(`SELECT count(*) FROM invoices WHERE amount = 9007199254740993`))
}

// An amount must be a whole number of minor units exactly, not once rounded to a double.
func TestAmountsThatADoubleRoundsAreRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, body := range []string{
		`{"amount": 4503599627370497.5, "currency": "USD"}`, // a double has no room for the .5
		`{"amount": 1e-400, "currency": "USD"}`,
		`{"amount": 9223372036854775808, "currency": "USD"}`,
	} {
		r := e.do("POST", "/invoices", alice, newKey(), body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", body, r.body)
		require.Equal(t, "invalid_request", r.code(t), body)
	}
	r := e.do("POST", "/orders/ord_1/complete", alice, newKey(), `null`)
	require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	require.Equal(t, "invalid_request", r.code(t))
	require.Zero(t, e.count(`SELECT count(*) FROM pgsaga_key`))
}
