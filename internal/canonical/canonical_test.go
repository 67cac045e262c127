package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/require"
)

// The canonicalizer is checked against three references: gowebpki/jcs (RFC 8785) wherever
// numbers fit doubles, a slow model (encoding/json with UseNumber, numbers compared with
// math/big) everywhere, and the plain canonicalizer (plain_test.go) byte for byte.

func canonical(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	c := &canonicalizer{out: make([]byte, 0, 64)} // a small buffer exercises the flushes
	err := c.canonicalize(&buf, body)
	return buf.Bytes(), err
}

func TestCanonicalNumbers(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]string{
		"0": "0", "-0": "0", "0.000": "0", "-0e-7": "0", "0E+999999999999": "0",
		"1": "1", "1.0": "1", "1e0": "1", "10e-1": "1", "0.1E+1": "1", "100e-2": "1",
		"-1": "-1", "-1.50": "-1.5", "123e-2": "1.23", "2e3": "2000", "20": "20",
		"9007199254740993":                       "9007199254740993",
		"9007199254740993.000":                   "9007199254740993",
		"0.1000000000000000055511151231257827":   "0.1000000000000000055511151231257827",
		"999999999999999999999":                  "999999999999999999999",
		"1e20":                                   "100000000000000000000",
		"1e21":                                   "1e+21",
		"1000000000000000000000":                 "1e+21",
		"1234567890123456789012":                 "1.234567890123456789012e+21",
		"123456789012345678901.5":                "123456789012345678901.5",
		"0.000001":                               "0.000001",
		"0.0000012":                              "0.0000012",
		"1e-7":                                   "1e-7",
		"-1.5e-7":                                "-1.5e-7",
		"1e-400":                                 "1e-400",
		"1.7976931348623157e308":                 "1.7976931348623157e+308",
		"1.7976931348623158e308":                 "1.7976931348623158e+308",
		"12.5e-1000":                             "1.25e-999",
		"1e-000000000999999999":                  "1e-999999999", // 9 digits after the exponent's zeros
		"0.00000000000000000000000000000000001":  "1e-35",
		"100000000000000000000000000000000000.0": "1e+35",
	} {
		got, err := canonical([]byte(lit))
		require.NoError(t, err, lit)
		require.Equal(t, want, string(got), lit)
	}
}

// Byte for byte RFC 8785 on the RFC's own examples and on documents whose numbers are their
// doubles' shortest spellings.
func TestCanonicalMatchesJCS(t *testing.T) {
	t.Parallel()
	for _, body := range jcsSeeds {
		want, err := jcs.Transform([]byte(body))
		require.NoError(t, err, body)
		got, err := canonical([]byte(body))
		require.NoError(t, err, body)
		require.Equal(t, string(want), string(got), body)
	}
}

// Why RFC 8785 alone will not do: gowebpki/jcs reads numbers as doubles, so two amounts one
// double apart in value but not in rounding are one request to it, which the contract forbids
// (422 on one key). The canonicalizer keeps them apart.
func TestJCSRoundsNumbersTheContractComparesExactly(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{`{"amount": 9007199254740993}`, `{"amount": 9007199254740992}`},
		{`{"amount": 0.1}`, `{"amount": 0.1000000000000000055511151231257827}`},
		{`{"amount": 1e-400}`, `{"amount": 0}`},
	} {
		a, err := jcs.Transform([]byte(pair[0]))
		require.NoError(t, err)
		b, err := jcs.Transform([]byte(pair[1]))
		require.NoError(t, err)
		require.Equal(t, string(a), string(b), "jcs writes %s and %s alike", pair[0], pair[1])

		fa, err := Fingerprint([]byte(pair[0]))
		require.NoError(t, err)
		fb, err := Fingerprint([]byte(pair[1]))
		require.NoError(t, err)
		require.NotEqual(t, fa, fb, "%s and %s are different requests", pair[0], pair[1])
	}
}

var jcsSeeds = []string{
	`{"numbers":[333333333.3333333,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
	`{"\u20ac":"Euro Sign","\r":"Carriage Return","\u000a":"Newline","1":"One","\u0080":"Control\u007f","\ud83d\ude02":"Smiley","\u00f6":"Latin Small Letter O With Diaeresis","\ufb33":"Hebrew Letter Dalet With Dagesh","</script>":"Browser Challenge"}`,
	`[56,{"d":true,"10":null,"1":[]}]`,
	`{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}`,
	`{"1":{"f":{"f":"hi","F":5},"\n":56.0},"10":{},"":"empty","a":{},"111":[{"e":"yes","E":"no"}],"A":{}}`,
	` "\u0000\u001f\u0020\b\f\n\r\t" `,
	`{"amount":2000,"currency":"USD","invoice_id":"inv_01890a5d-ac96-7bd8-9b2f-6c1c5f0a7e3b"}`,
	`[-0,0.5,-1e-7,1e21,1e-6,123456789.125,5e-324,1.7976931348623157e308]`,
	`{"\uffff":1,"\ud800\udc00":2,"\ue000":3,"\ud7ff":4}`,
}

func TestHasUnsafeByte(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		for pos := range 8 {
			for _, fill := range []byte{'a', 0x20, 0x7f, '#', '['} {
				chunk := bytes.Repeat([]byte{fill}, 8)
				chunk[pos] = byte(b)
				require.Equal(t, !stringSafe[b], hasUnsafeByte(binary.LittleEndian.Uint64(chunk)), "byte %#x at %d among %q", b, pos, fill)
			}
		}
	}
}

// The canonicalizer allocates nothing once its buffers have grown to a body's size; Fingerprint
// adds its result (and, when the pool was emptied, a new canonicalizer: under the race detector
// sync.Pool drops items at random, so that part is asserted only without it).
func TestCanonicalAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts every allocation in the process.
	for _, body := range [][]byte{paymentBody, bodyOfSize(4 << 10)} {
		c := newCanonicalizer()
		sum := make([]byte, 0, sha256.Size)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := c.appendFingerprint(sum, body); err != nil {
				panic(err)
			}
			c.reset()
		})
		require.Zero(t, allocs, "canonicalising %d bytes", len(body))

		if raceEnabled {
			continue
		}
		allocs = testing.AllocsPerRun(100, func() {
			if _, err := Fingerprint(body); err != nil {
				panic(err)
			}
		})
		require.LessOrEqual(t, allocs, 1.0, "Fingerprint of %d bytes allocates only its result", len(body))
	}
}

// FuzzCanonical checks one body against both references:
//   - what it refuses, jcs refuses (or it has a number jcs would round that we refuse), and
//     everything json.Valid refuses, it refuses;
//   - the body's value written again (other member order, escapes, spellings of its numbers)
//     has the same fingerprint, and the body with one number changed by less than a double can
//     see (or one string changed) has another;
//   - with its numbers replaced by their doubles' shortest spellings, the canonical form is
//     jcs's, byte for byte.
func FuzzCanonical(f *testing.F) {
	for _, s := range jcsSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{"amount": 9007199254740993}`, `[1e400]`, `[1e-400]`, `{"a":1,"a":2}`, `["\ud800"]`,
		"[\"\xff\"]", `[0.1000000000000000055511151231257827]`, `[[[[{"a":[{"b":{}}]}]]]]`, `{"b":[{"z":1,"y":2}],"a":{"c":[3]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, err := canonical([]byte(body))
		want, jerr := jcs.Transform([]byte(body))
		if !json.Valid([]byte(body)) {
			require.Error(t, err, "not JSON: %q", body)
		}
		if err != nil {
			if jerr == nil {
				require.True(t, exponentOver(body, maxExponentDigits), "refused %q that RFC 8785 takes: %v", body, err)
			}
			return
		}
		require.NoError(t, jerr, "took %q that RFC 8785 refuses", body)
		if exponentOver(body, 3) {
			return // too large for the math/big model
		}
		v := refDecode(t, body)
		if allShortest(v) {
			require.Equal(t, string(want), string(got), "%q", body)
		}
		doubles := respell(v, &spelling{numbers: shortestDouble})
		want, err = jcs.Transform(doubles)
		require.NoError(t, err, "%s", doubles)
		got, err = canonical(doubles)
		require.NoError(t, err, "%s", doubles)
		require.Equal(t, string(want), string(got), "%s", doubles)

		fp := mustFingerprint(t, []byte(body))
		for _, s := range spellings {
			other := respell(v, &s)
			require.Equal(t, fp, mustFingerprint(t, other), "%q respelled as %s", body, other)
		}
		changed, ok := perturb(v)
		if !ok {
			changed = []any{v}
		}
		require.False(t, refEqual(v, changed))
		other := respell(changed, &spelling{})
		require.NotEqual(t, fp, mustFingerprint(t, other), "%q changed to %s", body, other)
	})
}

// FuzzFingerprintPairs: two bodies the reference finds equal have one fingerprint, two it finds
// different have two.
func FuzzFingerprintPairs(f *testing.F) {
	for _, p := range [][2]string{
		{`9007199254740993`, `9007199254740992`}, {`[1,1.0]`, `[1e0,10e-1]`}, {`0.1`, `0.1000000000000000055511151231257827`},
		{`{"a":1,"b":[2]}`, `{"b":[2.0],"a":1}`}, {`"\u00e9"`, `"é"`}, {`-0`, `0`}, {`1e-400`, `0`}, {`{}`, `[]`},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		fa, erra := Fingerprint([]byte(a))
		fb, errb := Fingerprint([]byte(b))
		if erra != nil || errb != nil || exponentOver(a, 3) || exponentOver(b, 3) {
			return
		}
		require.Equal(t, refEqual(refDecode(t, a), refDecode(t, b)), bytes.Equal(fa, fb), "%q and %q", a, b)
	})
}

func mustFingerprint(t *testing.T, body []byte) string {
	t.Helper()
	fp, err := Fingerprint(body)
	require.NoError(t, err, "%s", body)
	return string(fp)
}

// exponentOver reports a number whose exponent has more than digits digits. Beyond 3 the model's
// big.Rat takes too long; beyond 9 the canonicalizer refuses what jcs rounds.
func exponentOver(body string, digits int) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			if i := strings.IndexAny(string(n), "eE"); i >= 0 && len(strings.TrimLeft(strings.TrimLeft(string(n[i+1:]), "+-"), "0")) > digits {
				return true
			}
		}
	}
}

// refDecode is the model's value of a body the canonicalizer took: objects as maps (it refused
// duplicates), numbers as their literals.
func refDecode(t *testing.T, body string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "%q", body)
	require.ErrorIs(t, dec.Decode(new(any)), io.EOF, "%q", body)
	return v
}

func rat(n json.Number) *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		panic("not a number: " + n)
	}
	return r
}

// refEqual is JSON value equality with exact numbers.
func refEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, va := range a {
			vb, ok := b[k]
			if !ok || !refEqual(va, vb) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		return ok && slices.EqualFunc(a, b, refEqual)
	case json.Number:
		b, ok := b.(json.Number)
		return ok && rat(a).Cmp(rat(b)) == 0
	default:
		return a == b
	}
}

// shortestDouble spells a number as its double's shortest spelling, as RFC 8785 reads it.
func shortestDouble(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		panic(err)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func allShortest(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if !allShortest(e) {
				return false
			}
		}
	case []any:
		return !slices.ContainsFunc(v, func(e any) bool { return !allShortest(e) })
	case json.Number:
		return rat(v).Cmp(rat(json.Number(shortestDouble(v)))) == 0
	}
	return true
}

// exactShifted spells n's exact value as digits × 10^-shift, e.g. 1.5 with shift 3 as "1500e-3":
// another spelling of the same value, made with math/big, not with the code under test.
func exactShifted(shift int, upper bool) func(json.Number) string {
	return func(n json.Number) string {
		r := rat(n)
		r.Mul(r, new(big.Rat).SetFrac(pow10(max(shift, 0)), pow10(max(-shift, 0))))
		digits := exactDecimal(r, 2)
		e := "e"
		if upper {
			e = "E+"
			if shift > 0 {
				e = "E"
			}
		}
		return digits + e + strconv.Itoa(-shift)
	}
}

// exactDecimal writes a terminating decimal exactly, with extra trailing zeros.
func exactDecimal(r *big.Rat, extra int) string {
	// The denominator is 2^a 5^b: max(a, b) decimals are exact.
	d := new(big.Int).Set(r.Denom())
	factors := func(p int64) int {
		k, q, rem := 0, big.NewInt(p), new(big.Int)
		for {
			quo, _ := new(big.Int).QuoRem(d, q, rem)
			if rem.Sign() != 0 {
				return k
			}
			d, k = quo, k+1
		}
	}
	return r.FloatString(max(factors(2), factors(5)) + extra)
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// spelling is one way of writing a value back as JSON.
type spelling struct {
	numbers   func(json.Number) string // nil: as it was
	reverse   bool                     // members in reverse order
	escapeAll bool                     // every non-ASCII character (and some ASCII) as \u escapes
	indent    bool
}

var spellings = []spelling{
	{reverse: true},
	{numbers: exactShifted(3, false), escapeAll: true},
	{numbers: exactShifted(-2, true), reverse: true, indent: true},
	{numbers: exactShifted(0, false)},
}

func respell(v any, s *spelling) []byte {
	var buf bytes.Buffer
	writeSpelled(&buf, v, s)
	return buf.Bytes()
}

func writeSpelled(buf *bytes.Buffer, v any, s *spelling) {
	sep := func() {
		if s.indent {
			buf.WriteString("\n  ")
		}
	}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if s.reverse {
			slices.Reverse(keys)
		}
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			sep()
			writeSpelled(buf, k, s)
			buf.WriteString(" : ")
			writeSpelled(buf, v[k], s)
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			sep()
			writeSpelled(buf, e, s)
		}
		buf.WriteByte(']')
	case json.Number:
		if s.numbers != nil {
			buf.WriteString(s.numbers(v))
		} else {
			buf.WriteString(string(v))
		}
	case string:
		if !s.escapeAll {
			b, _ := json.Marshal(v) // escapes <, > and & as \u003c…: other escapes than RFC 8785's
			buf.Write(b)
			return
		}
		buf.WriteByte('"')
		for _, r := range v {
			switch {
			case r > 0xFFFF:
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(buf, `\u%04X\u%04x`, hi, lo)
			case r >= 0x80 || r < 0x20 || r == '"' || r == '\\' || r == 'a' || r == '/':
				fmt.Fprintf(buf, `\u%04x`, r)
			default:
				buf.WriteRune(r)
			}
		}
		buf.WriteByte('"')
	default:
		b, _ := json.Marshal(v)
		buf.Write(b)
	}
}

// perturb returns v with its first number changed by 10^-25 of a unit (a change no double of a
// number above 10^-9 can see), or else its first string changed; false if it has neither.
func perturb(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p, ok := perturb(v[k]); ok {
				out := make(map[string]any, len(v))
				for k2, e := range v {
					out[k2] = e
				}
				out[k] = p
				return out, true
			}
		}
	case []any:
		for i, e := range v {
			if p, ok := perturb(e); ok {
				out := slices.Clone(v)
				out[i] = p
				return out, true
			}
		}
	case json.Number:
		r := rat(v)
		r.Add(r, new(big.Rat).SetFrac(big.NewInt(1), pow10(25)))
		return json.Number(exactDecimal(r, 0)), true
	case string:
		return v + "\u00e9", true
	}
	return nil, false
}

// The benchmark bodies: a payment request, and objects of payments and line items of about
// 4 KiB and 1 MiB.
var paymentBody = []byte(`{"invoice_id": "inv_01890a5d-ac96-7bd8-9b2f-6c1c5f0a7e3b", "amount": 2000}`)

func bodyOfSize(n int) []byte {
	var items []string
	size := 0
	for i := 0; size < n; i++ {
		item := fmt.Sprintf(`{"sku": "sku-%06d", "name": "Line item \u00e9 %d", "quantity": %d, "unit_price": %d.%02d, "tags": ["a", "b"], "gift": %t}`,
			i, i, i%7+1, 100+i%900, i%100, i%3 == 0)
		items = append(items, item)
		size += len(item) + 2
	}
	return []byte(`{"order_id": "ord_1", "currency": "EUR", "items": [` + strings.Join(items, ", ") + `], "note": null}`)
}

// BenchmarkFingerprint measures Fingerprint against the plain canonicalizer (plain_test.go: the
// same fingerprints on encoding/json's tokens) and gowebpki/jcs (RFC 8785 with numbers rounded to
// doubles, which the contract does not allow), in the same run: each on its own (ns/op,
// allocs/op), then interleaved, alternating batches of each so that the load of a shared CPU hits
// them alike, reporting the median ratios of the rounds (plain/exact, jcs/exact: how many times
// slower). Timings never fail anything.
func BenchmarkFingerprint(b *testing.B) {
	for _, tc := range []struct {
		name string
		body []byte
	}{{"amount", []byte(`{"amount":100}`)}, {"payment", paymentBody}, {"4KiB", bodyOfSize(4 << 10)}, {"1MiB", bodyOfSize(1 << 20)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.Run("exact", benchmarkFingerprint(Fingerprint, tc.body))
			b.Run("plain", benchmarkFingerprint(plainFingerprint, tc.body))
			b.Run("jcs", benchmarkFingerprint(jcsFingerprint, tc.body))
			b.Run("interleaved", func(b *testing.B) {
				// A batch of each takes a few milliseconds.
				start := time.Now()
				_, _ = Fingerprint(tc.body)
				batch := max(1, int(2*time.Millisecond/max(time.Since(start), time.Nanosecond)))
				var exact, plain, viaJCS, plainRatios, jcsRatios []float64
				for b.Loop() {
					e := timeBatch(b, Fingerprint, tc.body, batch)
					p := timeBatch(b, plainFingerprint, tc.body, batch)
					j := timeBatch(b, jcsFingerprint, tc.body, batch)
					exact, plain, viaJCS = append(exact, e), append(plain, p), append(viaJCS, j)
					plainRatios, jcsRatios = append(plainRatios, p/e), append(jcsRatios, j/e)
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(median(exact), "exact-ns/op")
				b.ReportMetric(median(plain), "plain-ns/op")
				b.ReportMetric(median(viaJCS), "jcs-ns/op")
				b.ReportMetric(median(plainRatios), "plain/exact")
				b.ReportMetric(median(jcsRatios), "jcs/exact")
			})
		})
	}
}

func benchmarkFingerprint(fn func([]byte) ([]byte, error), body []byte) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := fn(body); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// timeBatch returns fn's mean time per call over n calls, in nanoseconds.
func timeBatch(b *testing.B, fn func([]byte) ([]byte, error), body []byte, n int) float64 {
	start := time.Now()
	for range n {
		if _, err := fn(body); err != nil {
			b.Fatal(err)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// jcsFingerprint is the fingerprint gowebpki/jcs gives: RFC 8785, numbers rounded to doubles.
func jcsFingerprint(body []byte) ([]byte, error) {
	canonical, err := jcs.Transform(body)
	if err != nil {
		return nil, errors.New("error canonicalising JSON")
	}
	sum := sha256.Sum256(canonical)
	return sum[:], nil
}
