package canonical

import (
	"math"
	"strconv"
)

// Numbers in the canonical form keep their exact decimal value.
//
// RFC 8785 writes a number as ECMAScript writes the IEEE double nearest to it, so every number
// that rounds to the same double gets one spelling: 9007199254740993 is written
// 9007199254740992. Here a number is written in the same ECMAScript layout, but from its own
// exact digits instead of the double's shortest ones:
//
//   - Any nonzero value is, in exactly one way, ±s × 10^(n−k), with s a k-digit integer whose
//     first and last digits are not 0 (strip the leading and trailing zeros of all the written
//     digits; n places the decimal point). Zero (and −0) is written 0.
//   - (sign, s, n) is laid out as ECMAScript's Number::toString lays out its (s, k, n): plain
//     digits while k ≤ n ≤ 21, a decimal point inside the digits while 0 < n ≤ 21, "0.000…"
//     while −6 < n ≤ 0, otherwise one digit, the rest after a point, and "e±(n−1)".
//
// The spelling is injective: it is a JSON number whose value is exactly the input's value (each
// layout is a decimal numeral of ±s × 10^(n−k)), so two numbers spelled alike are equal; and it
// depends only on (sign, s, n), which the value determines, so equal numbers are spelled alike
// (1, 1.0, 1e0, 10e-1 and 0.1E+1 are all "1"). A number's spelling holds only "-+.e" and digits,
// so it cannot run into the tokens around it, and the canonical document, itself JSON, denotes
// one value.
//
// Where the written digits are the shortest that round-trip through a double (every integer
// below 2^53, and most decimals people type), this is RFC 8785's spelling byte for byte, so
// fingerprints of such bodies are unchanged. Like RFC 8785 (and I-JSON) it refuses values beyond
// the double range; unlike it, it keeps values below that range's bottom (1e-400 is not 0), and
// refuses exponents of more than 9 digits, which no one sends but which would not fit the
// arithmetic below.

// maxExponentDigits bounds the digits (after leading zeros) of a number's exponent.
const maxExponentDigits = 9

// maxDecimalPoint is the largest n (the value's decimal point after its first significant digit)
// a double can reach: 1.8e308 has n = 309, and 1e309 (n = 310) is beyond it.
const maxDecimalPoint = 309

// decimal is a checked JSON number literal, read as ±s × 10^(n−k).
type decimal struct {
	lit        []byte
	neg        bool
	intDigits  []byte // the digits before the point
	fracDigits []byte // the digits after it
	// first and last bound s within intDigits followed by fracDigits: digits[first:last]. Both
	// are 0 when the value is 0.
	first, last int
	n           int64 // valid when the value is not 0
	expTooLong  bool  // the exponent has more than maxExponentDigits digits
}

// indexNumber checks the number starting at offset i (RFC 8259's grammar and the range above)
// and returns the offset just past it.
func (c *canonicalizer) indexNumber(i int) (int, error) {
	end, ok := scanNumber(c.in, i)
	if !ok {
		return end, syntaxError(end, "invalid number")
	}
	// Only a number with an exponent or over 300 integer digits can be out of range.
	if end-i > 300 || hasExponent(c.in[i:end]) {
		d := readDecimal(c.in[i:end])
		if d.isZero() {
			return end, nil
		}
		if d.expTooLong {
			return i, syntaxError(i, "number exponent out of range")
		}
		if d.n > maxDecimalPoint || d.n == maxDecimalPoint && overflowsDouble(d.lit) {
			return i, syntaxError(i, "number out of range")
		}
	}
	return end, nil
}

// scanNumber reads RFC 8259's number = [ "-" ] int [ frac ] [ exp ] from offset i, and returns
// the offset past it, or where it went wrong.
func scanNumber(in []byte, i int) (int, bool) {
	j := i
	if j < len(in) && in[j] == '-' {
		j++
	}
	switch {
	case j < len(in) && in[j] == '0':
		j++
	case j < len(in) && '1' <= in[j] && in[j] <= '9':
		j = skipDigits(in, j+1)
	default:
		return j, false
	}
	if j < len(in) && in[j] == '.' {
		k := skipDigits(in, j+1)
		if k == j+1 {
			return k, false
		}
		j = k
	}
	if j < len(in) && (in[j] == 'e' || in[j] == 'E') {
		j++
		if j < len(in) && (in[j] == '+' || in[j] == '-') {
			j++
		}
		k := skipDigits(in, j)
		if k == j {
			return k, false
		}
		j = k
	}
	return j, true
}

func skipDigits(in []byte, i int) int {
	for i < len(in) && '0' <= in[i] && in[i] <= '9' {
		i++
	}
	return i
}

func hasExponent(lit []byte) bool {
	for _, b := range lit {
		if b == 'e' || b == 'E' {
			return true
		}
	}
	return false
}

// overflowsDouble reports whether a literal rounds to an infinite double: exactly where RFC
// 8785's canonicalisation (through strconv.ParseFloat) gives up.
func overflowsDouble(lit []byte) bool {
	f, err := strconv.ParseFloat(string(lit), 64)
	return err != nil || math.IsInf(f, 0)
}

// readDecimal splits a literal that scanNumber accepted.
func readDecimal(lit []byte) decimal {
	d := decimal{lit: lit}
	j := 0
	if lit[0] == '-' {
		d.neg = true
		j++
	}
	k := skipDigits(lit, j)
	d.intDigits = lit[j:k]
	j = k
	if j < len(lit) && lit[j] == '.' {
		k = skipDigits(lit, j+1)
		d.fracDigits = lit[j+1 : k]
		j = k
	}
	var exp int64
	if j < len(lit) { // 'e' or 'E'
		j++
		negExp := lit[j] == '-'
		if lit[j] == '+' || lit[j] == '-' {
			j++
		}
		for j < len(lit) && lit[j] == '0' {
			j++
		}
		if len(lit)-j > maxExponentDigits {
			d.expTooLong = true
		} else {
			for ; j < len(lit); j++ {
				exp = exp*10 + int64(lit[j]-'0')
			}
		}
		if negExp {
			exp = -exp
		}
	}
	total := len(d.intDigits) + len(d.fracDigits)
	for d.first < total && d.digit(d.first) == '0' {
		d.first++
	}
	if d.first == total {
		d.first = 0
		return d
	}
	d.last = total
	for d.digit(d.last-1) == '0' {
		d.last--
	}
	// The point sits after intDigits, first digits in: n = exp + len(intDigits) − first.
	d.n = exp + int64(len(d.intDigits)) - int64(d.first)
	return d
}

func (d *decimal) isZero() bool { return d.last == 0 }

// digit is the x-th digit of intDigits followed by fracDigits.
func (d *decimal) digit(x int) byte {
	if x < len(d.intDigits) {
		return d.intDigits[x]
	}
	return d.fracDigits[x-len(d.intDigits)]
}

// writeNumber writes the canonical spelling of the checked number at offset i (see the top of
// this file) and returns the offset past it.
func (c *canonicalizer) writeNumber(i int) int {
	end, _ := scanNumber(c.in, i)
	lit := c.in[i:end]
	// The common case, an integer of at most 21 digits without an exponent, is its own
	// canonical spelling (but for -0); everything else takes the general path.
	digits := lit
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) <= 21 && (digits[0] != '0' || len(lit) == 1) && isDigits(digits) {
		c.write(lit)
		return end
	}
	d := readDecimal(lit)
	if d.isZero() {
		c.writeByte('0')
		return end
	}
	if d.neg {
		c.writeByte('-')
	}
	k := int64(d.last - d.first)
	switch n := d.n; {
	case k <= n && n <= 21:
		c.writeDigits(&d, d.first, d.last)
		c.writeZeros(int(n - k))
	case 0 < n && n <= 21:
		c.writeDigits(&d, d.first, d.first+int(n))
		c.writeByte('.')
		c.writeDigits(&d, d.first+int(n), d.last)
	case -6 < n && n <= 0:
		c.writeText("0.")
		c.writeZeros(int(-n))
		c.writeDigits(&d, d.first, d.last)
	default:
		c.writeDigits(&d, d.first, d.first+1)
		if k > 1 {
			c.writeByte('.')
			c.writeDigits(&d, d.first+1, d.last)
		}
		c.writeByte('e')
		if n-1 >= 0 {
			c.writeByte('+')
		} else {
			c.writeByte('-')
		}
		c.writeUint(uint64(abs64(n - 1)))
	}
	return end
}

func isDigits(lit []byte) bool {
	for _, b := range lit {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// writeDigits writes digits [from, to) of intDigits followed by fracDigits.
func (c *canonicalizer) writeDigits(d *decimal, from, to int) {
	split := len(d.intDigits)
	if from < split {
		c.write(d.intDigits[from:min(to, split)])
	}
	if to > split {
		c.write(d.fracDigits[max(from, split)-split : to-split])
	}
}

func (c *canonicalizer) writeZeros(n int) {
	const zeros = "0000000000000000000000"
	for n > 0 {
		k := min(n, len(zeros))
		c.writeText(zeros[:k])
		n -= k
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
