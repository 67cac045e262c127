package saga_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

func fingerprint(t testing.TB, body string) string {
	t.Helper()
	h, err := saga.Fingerprint([]byte(body))
	require.NoError(t, err, body)
	return string(h)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func hexOf(fingerprint string) string { return hex.EncodeToString([]byte(fingerprint)) }

func TestFingerprintEquivalentBodiesMatch(t *testing.T) {
	t.Parallel()
	base := `{"invoice_id":"inv_1","amount":2000,"meta":{"a":[1,2],"b":null}}`
	for _, same := range []string{
		`{"amount":2000,"invoice_id":"inv_1","meta":{"b":null,"a":[1,2]}}`,
		"{ \"invoice_id\" : \"inv_1\",\n\t\"amount\": 2000 , \"meta\":{\"a\":[1, 2],\"b\":null} }\r\n",
		`{"invoice_id":"inv_1","amount":2000.0,"meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2e3,"meta":{"a":[1.0,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":0.2E+4,"meta":{"a":[10e-1,200e-2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":20000000e-4,"meta":{"a":[1,2.000000000000000000000000],"b":null}}`,
		`{"invoice_id":"inv_\u0031","amount":2000,"meta":{"a":[1,2],"b":null}}`,
		`{"\u0069nvoice_id":"inv\u005f1","amount":2000,"meta":{"a":[1,2],"\u0062":null}}`,
	} {
		require.Equal(t, fingerprint(t, base), fingerprint(t, same), same)
	}
	for _, different := range []string{
		`{"invoice_id":"inv_1","amount":2001,"meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":-2000,"meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2000.0000000000000000001,"meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":"2000","meta":{"a":[1,2],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2000,"meta":{"a":[2,1],"b":null}}`,
		`{"invoice_id":"inv_1","amount":2000,"meta":{"a":[1,2]}}`,
		`{"invoice_id":"inv_1","amount":2000,"meta":{"a":[1,2],"b":false}}`,
		`{"invoice_id":"INV_1","amount":2000,"meta":{"a":[1,2],"b":null}}`,
		`[{"invoice_id":"inv_1","amount":2000,"meta":{"a":[1,2],"b":null}}]`,
	} {
		require.NotEqual(t, fingerprint(t, base), fingerprint(t, different), different)
	}
}

// Numbers are compared as exact decimal values (CONTRACT), not as the IEEE doubles RFC 8785
// rounds them to.
func TestFingerprintComparesNumbersExactly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b  string
		equal bool
	}{
		{"9007199254740993", "9007199254740992", false},
		{"9007199254740993", "9.007199254740993e15", true},
		{"0.1", "0.1000000000000000055511151231257827", false},
		{"0.1", "0.10", true},
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"1", "10e-1", true},
		{"1", "0.1E+1", true},
		{"1", "1.0000000000000001", false},
		{"0", "-0", true},
		{"0", "0e999999999999999999999", true},
		{"0", "-0.000e-5", true},
		{"1e-400", "0", false},
		{"1e-400", "0.1e-399", true},
		{"100000000000000000000000", "1e23", true},
		{"99999999999999991611392", "1e23", false}, // one double, two numbers
		{"123456789012345678901234567890", "1.2345678901234567890123456789E29", true},
		{"-5e-7", "-0.0000005", true},
	} {
		a, b := fingerprint(t, "["+tc.a+"]"), fingerprint(t, "["+tc.b+"]")
		if tc.equal {
			require.Equal(t, a, b, "%s and %s are one number", tc.a, tc.b)
		} else {
			require.NotEqual(t, a, b, "%s and %s are different numbers", tc.a, tc.b)
		}
	}
}

// Where RFC 8785 and our form agree (no number beyond a double's precision), the fingerprint is
// the sha256 of RFC 8785's text: keys stored before the exact comparison keep matching.
func TestFingerprintIsRFC8785sWhereNumbersFitDoubles(t *testing.T) {
	t.Parallel()
	// RFC 8785, section 3.2.3, with the jcs test suite's additions.
	body := `{
	  "\u20ac": "Euro Sign", "\r": "Carriage Return", "\u000a": "Newline", "1": "One",
	  "\u0080": "Control\u007f", "\ud83d\ude02": "Smiley", "\u00f6": "Latin Small Letter O With Diaeresis",
	  "\ufb33": "Hebrew Letter Dalet With Dagesh", "</script>": "Browser Challenge",
	  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0, 1e21, 1e-7, 0.000001]
	}`
	want := "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\",\"</script>\":\"Browser Challenge\"," +
		"\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e+21,1e-7,0.000001]," +
		"\"\u0080\":\"Control\u007f\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\"," +
		"\"\U0001f602\":\"Smiley\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	// 333333333.33333329 is not its double's shortest spelling: our form keeps its digits.
	got := fingerprint(t, strings.Replace(body, "333333333.33333329", "333333333.3333333", 1))
	sum := sha256Hex(want)
	require.Equal(t, sum, hexOf(got))
	require.NotEqual(t, sum, hexOf(fingerprint(t, body)))
}

// What RFC 8785 refuses is refused: a client gets 400 invalid_json, and nothing is stored.
func TestFingerprintRefusals(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		``, ` `, `{`, `{"a":1,}`, `[1,]`, `[01]`, `[1.]`, `[.5]`, `[1e]`, `[+1]`, `[NaN]`, `[Infinity]`,
		`{"a" 1}`, `{'a':1}`, `{"a":1}x`, `[tru]`, `nul`, `"\x"`, `"\u12"`, "\"a\tb\"", "\ufeff{}",
		`{"a":1,"a":2}`,             // duplicate names
		`{"a":1,"\u0061":2}`,        // duplicate once unescaped
		`{"x":{"a":1,"b":2,"a":3}}`, // nested duplicate
		`["\ud800"]`, `["\udc00"]`,  // lone surrogates
		`["\ud800\u0041"]`,                               // a high surrogate without its low half
		"[\"\xff\"]", "[\"\xed\xa0\x80\"]", "[\"\xc3\"]", // invalid UTF-8, an encoded surrogate
		`[1e400]`, `[-1.8e308]`, `[1.7976931348623159e308]`, `[0.00001e314]`,
		`[1e-1000000000]`, // an exponent of more than 9 digits
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		_, err := saga.Fingerprint([]byte(body))
		require.Error(t, err, "%.80q", body)
		require.NotContains(t, err.Error(), "Control", "errors do not echo the body")
	}
	for _, body := range []string{
		`[1.7976931348623157e308]`, `[1.7976931348623158e308]`, `[1e-999999999]`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		"\"\x7f\"", `"\/"`, `"\ud83d\ude02"`, "[\"\xf0\x9f\x98\x82\"]",
	} {
		_, err := saga.Fingerprint([]byte(body))
		require.NoError(t, err, "%.80q", body)
	}

	// Through the handler: 400 invalid_json, and the key stays free.
	c, db := newClient(t, singleTx("pay", func() error { return nil }))
	h, err := c.Handler("pay", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) {
		return saga.Scope{Tenant: "t1", Actor: "a1"}, nil
	}})
	require.NoError(t, err)
	for _, body := range []string{`{"amount":1,"amount":2}`, `{"note":"\udead"}`, "{\"note\":\"\xc0\xaf\"}", `{"amount":1e999}`} {
		key := uuid.NewString()
		req := httptest.NewRequest(http.MethodPost, "/pay", bytes.NewBufferString(body))
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusBadRequest, rec.Code, body)
		var got struct{ Error, Message string }
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		require.Equal(t, saga.CodeInvalidJSON, got.Error, body)
		require.NotEmpty(t, got.Message)
		_, err := c.KeyGet(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key)
		require.ErrorIs(t, err, saga.ErrKeyNotFound, "nothing is stored for %q", body)
		require.Zero(t, countEffects(t, db, key))
	}
}

// CONTRACT: "Numbers in bodies are compared exactly". Two amounts that are the same IEEE double
// (2^53+1 rounds to 2^53) are different requests: the same key with the other one is refused.
func TestKeyReusedWithAnAmountBeyondDoublePrecision(t *testing.T) {
	t.Parallel()
	c, db := newClient(t, singleTx("pay", func() error { return nil }))
	key := uuid.NewString()
	req := request(key)
	req.Body = []byte(`{"amount": 9007199254740993}`)
	res, err := c.Run(t.Context(), "pay", req)
	require.NoError(t, err)
	require.False(t, res.Replayed)

	req.Body = []byte(`{"amount": 9007199254740992}`)
	_, err = c.Run(t.Context(), "pay", req)
	require.ErrorIs(t, err, saga.ErrKeyReused)
	require.Equal(t, 1, countEffects(t, db, key))

	req.Body = []byte(`{"amount": 9.007199254740993e15}`)
	res, err = c.Run(t.Context(), "pay", req)
	require.NoError(t, err, "another spelling of the same number is the same request")
	require.True(t, res.Replayed)
}
