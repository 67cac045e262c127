package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The plain canonicalizer: the same canonical form, byte for byte, in the shortest code that
// keeps numbers exact, on encoding/json's tokens. It is the reference the canonicalizer is fuzzed
// against, and the baseline BenchmarkFingerprint measures it against: what the canonicalizer's
// code buys is docs/performance.md's to say.
//
// encoding/json checks RFC 8259's grammar and nesting (10000 levels, as here), and tokens keep
// numbers as written (UseNumber). What RFC 8785 refuses beyond that, it lets through: invalid
// UTF-8 and escaped surrogates that are not half of a pair (it reads both as U+FFFD), and
// duplicate names (an object is a stream of tokens here, so they show once its members are
// sorted).

func plainFingerprint(body []byte) ([]byte, error) {
	canonical, err := plainCanonical(body)
	if err != nil {
		return nil, fmt.Errorf("error canonicalising JSON: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return sum[:], nil
}

func plainCanonical(body []byte) ([]byte, error) {
	if !json.Valid(body) {
		return nil, errors.New("not JSON")
	}
	if !utf8.Valid(body) {
		return nil, errors.New("invalid UTF-8")
	}
	if err := checkSurrogateEscapes(body); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	v, err := plainValue(dec)
	if err != nil {
		return nil, err
	}
	return appendPlain(nil, v), nil
}

// checkSurrogateEscapes refuses a \u escape of a surrogate that is not the first half of a pair
// followed by its second.
func checkSurrogateEscapes(body []byte) error {
	hex := func(i int) rune {
		if i+4 > len(body) {
			return 0
		}
		r, _ := strconv.ParseUint(string(body[i:i+4]), 16, 32)
		return rune(r)
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		i++ // the escaped character: a 'u' or one that is not
		if body[i] != 'u' {
			continue
		}
		r := hex(i + 1)
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r >= 0xDC00 || !bytes.HasPrefix(body[i+1:], []byte(`\u`)) {
			return errors.New("unpaired surrogate")
		}
		if low := hex(i + 3); low < 0xDC00 || low > 0xDFFF {
			return errors.New("unpaired surrogate")
		}
		i += 6
	}
	return nil
}

// A value is one of: plainObject, []any, plainNumber (already canonical), string, bool, nil.
type (
	plainObject []plainMember
	plainMember struct {
		name  string
		units []uint16 // name in UTF-16, which RFC 8785 sorts by
		value any
	}
	plainNumber string
)

func plainValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim: // '{' or '['
		var object plainObject
		array := []any{}
		for dec.More() {
			var name json.Token
			if tok == '{' {
				if name, err = dec.Token(); err != nil {
					return nil, err
				}
			}
			v, err := plainValue(dec)
			if err != nil {
				return nil, err
			}
			if tok == '{' {
				units := utf16.Encode([]rune(name.(string)))
				object = append(object, plainMember{name.(string), units, v})
			} else {
				array = append(array, v)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		if tok == '[' {
			return array, nil
		}
		slices.SortFunc(object, func(a, b plainMember) int { return slices.Compare(a.units, b.units) })
		for k := 1; k < len(object); k++ {
			if object[k-1].name == object[k].name {
				return nil, errors.New("duplicate member name")
			}
		}
		return object, nil
	case json.Number:
		return plainSpelling(string(tok))
	default:
		return tok, nil
	}
}

func appendPlain(b []byte, v any) []byte {
	switch v := v.(type) {
	case plainObject:
		b = append(b, '{')
		for k, m := range v {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendPlainString(b, m.name)
			b = append(b, ':')
			b = appendPlain(b, m.value)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for k, e := range v {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendPlain(b, e)
		}
		return append(b, ']')
	case string:
		return appendPlainString(b, v)
	case plainNumber:
		return append(b, v...)
	case bool:
		return strconv.AppendBool(b, v)
	default:
		return append(b, "null"...)
	}
}

// appendPlainString writes s as RFC 8785 does: as it is but '"' and '\' escaped, and control
// characters as \b \t \n \f \r or \u00xx.
func appendPlainString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
	}
	return append(b, '"')
}

// plainSpelling is the canonical spelling of a number literal (number.go): ±s × 10^(n−k) laid out
// as ECMAScript lays out a double's digits.
func plainSpelling(lit string) (plainNumber, error) {
	unsigned := strings.TrimPrefix(lit, "-")
	mantissa, exponent, _ := strings.Cut(strings.ToLower(unsigned), "e")
	intDigits, fracDigits, _ := strings.Cut(mantissa, ".")
	digits := intDigits + fracDigits
	significant := strings.TrimLeft(digits, "0")
	if significant == "" {
		return "0", nil
	}
	exponentDigits := strings.TrimLeft(strings.TrimLeft(exponent, "+-"), "0")
	if len(exponentDigits) > 9 {
		return "", errors.New("number exponent out of range")
	}
	exp, _ := strconv.ParseInt("0"+exponentDigits, 10, 64)
	if strings.HasPrefix(exponent, "-") {
		exp = -exp
	}
	s := strings.TrimRight(significant, "0")
	n := exp + int64(len(intDigits)-(len(digits)-len(significant)))
	k := int64(len(s))
	if f, err := strconv.ParseFloat(lit, 64); n > 309 || err != nil && math.IsInf(f, 0) {
		return "", errors.New("number out of range")
	}
	sign := ""
	if len(unsigned) < len(lit) {
		sign = "-"
	}
	switch {
	case k <= n && n <= 21:
		return plainNumber(sign + s + strings.Repeat("0", int(n-k))), nil
	case 0 < n && n <= 21:
		return plainNumber(sign + s[:n] + "." + s[n:]), nil
	case -6 < n && n <= 0:
		return plainNumber(sign + "0." + strings.Repeat("0", int(-n)) + s), nil
	}
	fraction := ""
	if k > 1 {
		fraction = "." + s[1:]
	}
	return plainNumber(fmt.Sprintf("%s%s%se%+d", sign, s[:1], fraction, n-1)), nil
}

// FuzzPlainAgrees: the canonicalizer and the plain one refuse the same bodies and write the
// same canonical form of the others, byte for byte.
func FuzzPlainAgrees(f *testing.F) {
	for _, s := range jcsSeeds {
		f.Add(s)
	}
	for _, s := range []string{`{"amount": 9007199254740993}`, `[1e400]`, `[1e-400]`, `{"a":1,"a":2}`, `["\ud800"]`,
		`["\ud800\u0041"]`, `["\udc00\ud800"]`, `"\ud83d\ude02"`, "[\"\xff\"]", "[\"\xed\xa0\x80\"]",
		`[0.1000000000000000055511151231257827]`, `[[[[{"a":[{"b":{}}]}]]]]`, `{"b":[{"z":1,"y":2}],"a":{"c":[3]}}`,
		`[1e-1000000000]`, `0E+999999999999`, `[1.7976931348623158e308, -1.7976931348623159e308]`, `[-0.0E-7, 12.5e-1000]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, err := canonical([]byte(body))
		want, plainErr := plainCanonical([]byte(body))
		if plainErr != nil {
			require.Error(t, err, "%q is refused by the plain canonicalizer: %v", body, plainErr)
			return
		}
		require.NoError(t, err, "%q is taken by the plain canonicalizer", body)
		require.Equal(t, string(want), string(got), "%q", body)
	})
}
