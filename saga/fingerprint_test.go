package saga_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

func fingerprint(t testing.TB, body string) string {
	t.Helper()
	h, err := saga.Fingerprint([]byte(body))
	require.NoError(t, err, body)
	return string(h)
}

func TestFingerprintEquivalentBodiesMatch(t *testing.T) {
	t.Parallel()
	base := `{"invoice_id":"inv_1","amount":2000,"meta":{"a":[1,2],"b":null}}`
	for _, same := range []string{
		`{"amount":2000,"invoice_id":"inv_1","meta":{"b":null,"a":[1,2]}}`,
		"{ \"invoice_id\" : \"inv_1\",\n\t\"amount\": 2000 , \"meta\":{\"a\":[1, 2],\"b\":null} }",
		`{"invoice_id":"inv_1","amount":2000.0,"meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2e3,"meta":{"a":[1.0,2],"b":null}}`,
		`{"invoice_id":"inv_\u0031","amount":2000,"meta":{"a":[1,2],"b":null}}`,
	} {
		require.Equal(t, fingerprint(t, base), fingerprint(t, same), same)
	}
	for _, different := range []string{
		`{"invoice_id":"inv_1","amount":2001,"meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":"2000","meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2000,"meta":{"a":[2,1],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2000,"meta":{"a":[1,2]}}`,
		`{"invoice_id":"INV_1","amount":2000,"meta":{"a":[1,2],"b":null}}`,
	} {
		require.NotEqual(t, fingerprint(t, base), fingerprint(t, different), different)
	}
	_, err := saga.Fingerprint([]byte(`{"a":`))
	require.Error(t, err)
}

// FuzzFingerprint checks that re-encoding a body (which reorders members and changes white
// space and number spelling) never changes its fingerprint, and that changing a value does.
func FuzzFingerprint(f *testing.F) {
	for _, seed := range []string{`{"a":1,"b":[true,null,"x"]}`, `{"amount":2000,"currency":"USD"}`, `[1,2.5,{"z":{"y":"é"}}]`, `"s"`, `0`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var v any
		if json.Unmarshal([]byte(body), &v) != nil {
			return
		}
		h1, err := saga.Fingerprint([]byte(body))
		if err != nil {
			return // RFC 8785 refuses some JSON (duplicate names, lone surrogates); that is fine
		}
		reencoded, err := json.MarshalIndent(v, "", "  ")
		require.NoError(t, err)
		h2, err := saga.Fingerprint(reencoded)
		require.NoError(t, err)
		require.Equal(t, h1, h2, "re-encoding %q as %q changed the fingerprint", body, reencoded)

		changed, err := json.Marshal([]any{v, "changed"})
		require.NoError(t, err)
		h3, err := saga.Fingerprint(changed)
		require.NoError(t, err)
		require.NotEqual(t, h1, h3)
	})
}
