package payments

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The request decoders never panic; a body they refuse gets an error with a message; a body they
// take round-trips (its values, written again as JSON, decode to the same values), and the
// amount taken is exactly the number the body holds: a whole, positive number of minor units.

var decoderSeeds = []string{
	`{"amount": 5000, "currency": "USD"}`, `{"invoice_id": "inv_1", "amount": 2000}`, `{"total": 1200}`, `{}`,
	`{"amount": 5e3, "currency": "EUR"}`, `{"amount": 5000.0, "currency": "USD"}`, `{"amount": "5000"}`,
	`{"amount": -1}`, `{"amount": 0}`, `{"amount": 1.5}`, `{"amount": 9007199254740993}`, `{"amount": 1e400}`,
	`{"amount": 9223372036854775807}`, `{"amount": 9223372036854775808}`, `{"amount": 4503599627370497.5}`,
	`{"amount": 1e-999999999}`, `{"total": 12e999999999}`, `{"amount": null}`, `[]`, `null`, `"x"`, `{"invoice_id": 5}`,
	`{"total": 4503599627370497.5}`, `{"invoice_id": "inv_1", "amount": 4503599627370497.5}`, `{"total": 1e2}`,
	`{"amount": 5000, "currency": "usd"}`, `{"AMOUNT": 5, "Currency": "USD"}`, `{"amount": 1} {"amount": 2}`,
}

func FuzzParseCreateInvoice(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body string) {
		amount, currency, err := parseCreateInvoice([]byte(body))
		if refused(t, err) {
			return
		}
		requireExactAmount(t, body, "amount", amount)
		again, _ := json.Marshal(map[string]any{"amount": amount, "currency": currency})
		a2, c2, err := parseCreateInvoice(again)
		require.NoError(t, err, "%s", again)
		require.Equal(t, []any{amount, currency}, []any{a2, c2})
	})
}

func FuzzParseCreatePayment(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body string) {
		invoice, amount, err := parseCreatePayment([]byte(body))
		if refused(t, err) {
			return
		}
		require.NotEmpty(t, invoice)
		requireExactAmount(t, body, "amount", amount)
		again, _ := json.Marshal(map[string]any{"invoice_id": invoice, "amount": amount})
		i2, a2, err := parseCreatePayment(again)
		require.NoError(t, err, "%s", again)
		require.Equal(t, []any{invoice, amount}, []any{i2, a2})
	})
}

func FuzzParseCreateOrder(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body string) {
		total, err := parseCreateOrder([]byte(body))
		if refused(t, err) {
			return
		}
		requireExactAmount(t, body, "total", total)
		again, _ := json.Marshal(map[string]any{"total": total})
		t2, err := parseCreateOrder(again)
		require.NoError(t, err, "%s", again)
		require.Equal(t, total, t2)
	})
}

func FuzzValidateObject(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body string) {
		if refused(t, validateObject([]byte(body))) {
			return
		}
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &v), "%q", body)
		require.NotNil(t, v, "%q is an object", body)
	})
}

func addSeeds(f *testing.F) {
	for _, s := range decoderSeeds {
		f.Add(s)
	}
}

// refused reports whether a decoder refused the body, checking it said why.
func refused(t *testing.T, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	require.NotEmpty(t, strings.TrimSpace(err.Error()))
	return true
}

// requireExactAmount checks that the amount taken is exactly the value the body holds in field
// (as encoding/json reads it: the last member whose name matches, ignoring case).
func requireExactAmount(t *testing.T, body, field string, got int64) {
	t.Helper()
	require.Positive(t, got)
	dec := json.NewDecoder(strings.NewReader(body))
	_, err := dec.Token() // '{'
	require.NoError(t, err)
	var raw json.RawMessage
	for dec.More() {
		name, err := dec.Token()
		require.NoError(t, err)
		var value json.RawMessage
		require.NoError(t, dec.Decode(&value))
		if strings.EqualFold(name.(string), field) {
			raw = value
		}
	}
	if exp := strings.IndexAny(string(raw), "eE"); exp >= 0 && len(strings.TrimLeft(string(raw[exp+1:]), "+-0")) > 3 {
		return // math/big would take too long; the amount's bounds are checked above
	}
	want, ok := new(big.Rat).SetString(string(raw))
	require.True(t, ok, "%q: %s is taken as %d", body, raw, got)
	require.Zero(t, want.Cmp(new(big.Rat).SetInt64(got)), "%q: %s is taken as %d", body, raw, got)
}

func TestWholeNumber(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]int64{
		"5000": 5000, "5000.0": 5000, "5e3": 5000, "5E+3": 5000, "500000e-2": 5000, "0.5e4": 5000, "-7": -7,
		"0": 0, "-0.0": 0, "0e99999999999999999999": 0, "9223372036854775807": 9223372036854775807,
		"9223372036854775807.000": 9223372036854775807, "922337203685477580.7e1": 9223372036854775807,
		"-9223372036854775808": -9223372036854775808,
	} {
		got, err := wholeNumber(lit)
		require.NoError(t, err, lit)
		require.Equal(t, want, got, lit)
	}
	for lit, problem := range map[string]string{
		"1.5": "whole", "4503599627370497.5": "whole", "1e-1": "whole", "1e-99999999999999999999": "whole",
		"9223372036854775808": "large", "1e19": "large", "1e99999999999999999999": "large", "92233720368547758080e-1": "large",
	} {
		_, err := wholeNumber(lit)
		require.ErrorContains(t, err, problem, lit)
	}
}
