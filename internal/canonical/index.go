package canonical

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// The first pass of the canonicalizer: check that the body is JSON that RFC 8785 accepts, and
// index its objects (members sorted by name, duplicates refused) for the second pass. Error
// messages give an offset, never a piece of the body, so nothing a client sent reaches a log.

var errUnexpectedEnd = errors.New("unexpected end of JSON")

// syntaxError reports what was wrong at offset i of the body.
func syntaxError(i int, what string) error {
	return fmt.Errorf("%s at offset %d", what, i)
}

// index checks the whole body: one value between optional white space.
func (c *canonicalizer) index() error {
	i := skipSpace(c.in, 0)
	end, err := c.indexValue(i)
	if err != nil {
		return err
	}
	if end = skipSpace(c.in, end); end != len(c.in) {
		return syntaxError(end, "unexpected data after the JSON value")
	}
	return nil
}

// indexValue checks the value starting at offset i and returns the offset just past it.
func (c *canonicalizer) indexValue(i int) (int, error) {
	if i >= len(c.in) {
		return i, errUnexpectedEnd
	}
	switch b := c.in[i]; {
	case b == '{':
		return c.indexObject(i)
	case b == '[':
		return c.indexArray(i)
	case b == '"':
		end, _, err := c.indexString(i)
		return end, err
	case b == '-' || '0' <= b && b <= '9':
		return c.indexNumber(i)
	case b == 't':
		return c.indexLiteral(i, "true")
	case b == 'f':
		return c.indexLiteral(i, "false")
	case b == 'n':
		return c.indexLiteral(i, "null")
	default:
		return i, syntaxError(i, "unexpected character")
	}
}

func (c *canonicalizer) indexLiteral(i int, lit string) (int, error) {
	if len(c.in)-i < len(lit) || string(c.in[i:i+len(lit)]) != lit {
		return i, syntaxError(i, "invalid literal")
	}
	return i + len(lit), nil
}

func (c *canonicalizer) enter(i int) error {
	if c.depth == maxNestingDepth {
		return syntaxError(i, fmt.Sprintf("nesting deeper than %d", maxNestingDepth))
	}
	c.depth++
	return nil
}

func (c *canonicalizer) indexArray(i int) (int, error) {
	if err := c.enter(i); err != nil {
		return i, err
	}
	defer func() { c.depth-- }()
	j := skipSpace(c.in, i+1)
	if j < len(c.in) && c.in[j] == ']' {
		return j + 1, nil
	}
	for {
		end, err := c.indexValue(j)
		if err != nil {
			return end, err
		}
		j = skipSpace(c.in, end)
		if j >= len(c.in) {
			return j, errUnexpectedEnd
		}
		switch c.in[j] {
		case ',':
			j = skipSpace(c.in, j+1)
		case ']':
			return j + 1, nil
		default:
			return j, syntaxError(j, "expected ',' or ']'")
		}
	}
}

func (c *canonicalizer) indexObject(i int) (int, error) {
	if err := c.enter(i); err != nil {
		return i, err
	}
	defer func() { c.depth-- }()
	self := len(c.objects)
	c.objects = append(grow(c.objects, 1), objectIndex{})
	base := len(c.pending)
	j := skipSpace(c.in, i+1)
	if j < len(c.in) && c.in[j] == '}' {
		j++
	} else {
		for {
			if j >= len(c.in) {
				return j, errUnexpectedEnd
			}
			if c.in[j] != '"' {
				return j, syntaxError(j, "expected a member name")
			}
			end, escaped, err := c.indexString(j)
			if err != nil {
				return end, err
			}
			m := memberIndex{rawStart: int32(j + 1), rawEnd: int32(end - 1), escaped: escaped}
			m.keyStart, m.keyEnd = m.rawStart, m.rawEnd
			if escaped {
				m.keyStart = int32(len(c.names))
				c.names = appendUnescaped(c.names, c.in[j+1:end-1])
				m.keyEnd = int32(len(c.names))
			}
			m.prefix, m.exactPrefix = namePrefix(c.name(m))
			j = skipSpace(c.in, end)
			if j >= len(c.in) || c.in[j] != ':' {
				return j, syntaxError(j, "expected ':'")
			}
			j = skipSpace(c.in, j+1)
			m.value, m.objects = int32(j), int32(len(c.objects))
			if end, err = c.indexValue(j); err != nil {
				return end, err
			}
			c.pending = append(grow(c.pending, 1), m)
			j = skipSpace(c.in, end)
			if j >= len(c.in) {
				return j, errUnexpectedEnd
			}
			if c.in[j] == '}' {
				j++
				break
			}
			if c.in[j] != ',' {
				return j, syntaxError(j, "expected ',' or '}'")
			}
			j = skipSpace(c.in, j+1)
		}
	}
	// Move this object's members out of the pending stack (its nested objects' members have
	// already left it) so that each object's members sit together, then sort them.
	first := len(c.members)
	c.members = append(grow(c.members, len(c.pending)-base), c.pending[base:]...)
	c.pending = c.pending[:base]
	members := c.members[first:]
	c.sortMembers(members)
	for k := 1; k < len(members); k++ {
		if c.compareMembers(members[k-1], members[k]) == 0 {
			return j, syntaxError(int(members[k].rawStart)-1, "duplicate member name")
		}
	}
	c.objects[self] = objectIndex{end: int32(j), first: int32(first), count: int32(len(members)), after: int32(len(c.objects))}
	return j, nil
}

// grow makes room for n more elements, at least doubling the capacity when it must grow: append
// grows a large slice by a quarter at a time, which allocates several times the final size for
// the long arrays of objects a large body may hold.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, max(n, cap(s), 16))
}

func (c *canonicalizer) name(m memberIndex) []byte {
	if m.escaped {
		return c.names[m.keyStart:m.keyEnd]
	}
	return c.in[m.keyStart:m.keyEnd]
}

// sortMembers sorts an object's members by name: by insertion, as most objects are small (and
// many arrive sorted), else with slices.SortFunc.
func (c *canonicalizer) sortMembers(members []memberIndex) {
	if len(members) > 12 {
		slices.SortFunc(members, c.compareMembers)
		return
	}
	for k := 1; k < len(members); k++ {
		m := members[k]
		j := k
		for ; j > 0 && c.compareMembers(members[j-1], m) > 0; j-- {
			members[j] = members[j-1]
		}
		members[j] = m
	}
}

func (c *canonicalizer) compareMembers(a, b memberIndex) int {
	if a.exactPrefix && b.exactPrefix && a.prefix != b.prefix {
		if a.prefix < b.prefix {
			return -1
		}
		return 1
	}
	return compareUTF16(c.name(a), c.name(b))
}

// namePrefix is a name's first 8 bytes as a big-endian number, zero-padded: when two names'
// prefixes differ, they order the names as compareUTF16 does (the first differing byte decides,
// and a name that runs out first is a prefix of the other, whose byte there is not 0), unless a
// byte 0xEE or above, where UTF-16 order departs from byte order, is among them: exact is false
// then. Equal prefixes say nothing; the full names are compared.
func namePrefix(name []byte) (prefix uint64, exact bool) {
	exact = true
	for k := range 8 {
		var b byte
		if k < len(name) {
			b = name[k]
		}
		exact = exact && b < 0xEE
		prefix = prefix<<8 | uint64(b)
	}
	return prefix, exact
}

// compareUTF16 orders two valid UTF-8 strings as RFC 8785 orders member names: by their UTF-16
// code units. That is byte order except where a character from U+E000 to U+FFFF (one code unit
// of 0xE000 or more; UTF-8 lead byte 0xEE or 0xEF) meets one above U+FFFF (a surrogate pair
// starting at 0xD800-0xDBFF; lead byte 0xF0-0xF4): UTF-16 puts the first after the second. At
// the first differing byte both strings are at the same place in a character, so if either byte
// is a lead byte both are, and if neither is, the characters have one lead byte and one length,
// where the two orders agree.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	x, y := a[i], b[i]
	switch {
	case x >= 0xEE && x <= 0xEF && y >= 0xF0:
		return 1
	case y >= 0xEE && y <= 0xEF && x >= 0xF0:
		return -1
	}
	return int(x) - int(y)
}

// stringSafe marks the bytes a string may hold as they are: printable ASCII but '"' and '\'.
var stringSafe = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// hasUnsafeByte reports whether one of the 8 bytes in x is not stringSafe: below 0x20, '"', '\'
// or 0x80 and above. (x - n×0x01…) &^ x has a byte's top bit set only if some byte of x is below
// n (for n ≤ 0x80), and x ^ b×0x01… has a zero byte where x has b: the classic SWAR tests.
func hasUnsafeByte(x uint64) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^('"'*ones), x^('\\'*ones)
	return ((x-0x20*ones)&^x|(quote-ones)&^quote|(backslash-ones)&^backslash|x)&tops != 0
}

// indexString checks the string whose opening quote is at i and returns the offset past its
// closing quote and whether it holds escapes. It refuses what RFC 8785 refuses: raw control
// characters, invalid UTF-8 (including encoded surrogates), unknown escapes and \u escapes of a
// surrogate that is not half of a pair.
func (c *canonicalizer) indexString(i int) (end int, escaped bool, err error) {
	in := c.in
	j := i + 1
	for {
		for j+8 <= len(in) && !hasUnsafeByte(binary.LittleEndian.Uint64(in[j:])) {
			j += 8
		}
		for j < len(in) && stringSafe[in[j]] {
			j++
		}
		if j >= len(in) {
			return j, escaped, errUnexpectedEnd
		}
		switch b := in[j]; {
		case b == '"':
			return j + 1, escaped, nil
		case b == '\\':
			escaped = true
			if j, err = checkEscape(in, j); err != nil {
				return j, escaped, err
			}
		case b < 0x20:
			return j, escaped, syntaxError(j, "control character in string")
		default:
			r, size := utf8.DecodeRune(in[j:])
			if r == utf8.RuneError && size <= 1 {
				return j, escaped, syntaxError(j, "invalid UTF-8 in string")
			}
			j += size
		}
	}
}

// checkEscape checks the escape whose backslash is at j and returns the offset past it (past
// both halves of a surrogate pair).
func checkEscape(in []byte, j int) (int, error) {
	if j+1 >= len(in) {
		return j, errUnexpectedEnd
	}
	switch in[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return j + 2, nil
	case 'u':
	default:
		return j, syntaxError(j, "invalid escape")
	}
	r, ok := hex4(in, j+2)
	if !ok {
		return j, syntaxError(j, `invalid \u escape`)
	}
	switch {
	case !utf16.IsSurrogate(r):
		return j + 6, nil
	case r >= 0xDC00:
		return j, syntaxError(j, "unpaired surrogate")
	}
	low, ok := hex4(in, j+8)
	if !ok || in[j+6] != '\\' || in[j+7] != 'u' || low < 0xDC00 || low > 0xDFFF {
		return j, syntaxError(j, "unpaired surrogate")
	}
	return j + 12, nil
}

// hex4 reads the four hex digits of a \u escape starting at offset i.
func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, b := range in[i : i+4] {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(b)
	}
	return r, true
}

// appendUnescaped appends the value of a checked string's contents (between its quotes).
func appendUnescaped(dst, raw []byte) []byte {
	for len(raw) > 0 {
		k := 0
		for k < len(raw) && raw[k] != '\\' {
			k++
		}
		dst = append(dst, raw[:k]...)
		if k == len(raw) {
			break
		}
		r, size := unescape(raw[k:])
		dst = utf8.AppendRune(dst, r)
		raw = raw[k+size:]
	}
	return dst
}

// unescape decodes the checked escape at the start of esc into its character and length.
func unescape(esc []byte) (rune, int) {
	switch esc[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, _ := hex4(esc, 2)
		if !utf16.IsSurrogate(r) {
			return r, 6
		}
		low, _ := hex4(esc, 8)
		return utf16.DecodeRune(r, low), 12
	default: // '"', '\\', '/'
		return rune(esc[1]), 2
	}
}

// skipSpace returns the offset of the first byte from i on that is not JSON white space.
func skipSpace(in []byte, i int) int {
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
