package canonical

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The second pass of the canonicalizer: write the checked body's canonical form. Arrays and
// scalars are written in document order as the body is read again; an object's members are
// written in the order the first pass sorted them, each from where its value starts.

// writeValue writes the value at offset i and returns the offset just past it.
func (c *canonicalizer) writeValue(i int) int {
	switch c.in[i] {
	case '{':
		return c.writeObject()
	case '[':
		return c.writeArray(i)
	case '"':
		return c.writeStringValue(i)
	case 't':
		c.writeText("true")
		return i + 4
	case 'f':
		c.writeText("false")
		return i + 5
	case 'n':
		c.writeText("null")
		return i + 4
	default:
		return c.writeNumber(i)
	}
}

func (c *canonicalizer) writeArray(i int) int {
	c.writeByte('[')
	j := skipSpace(c.in, i+1)
	if c.in[j] != ']' {
		for {
			j = skipSpace(c.in, c.writeValue(j))
			if c.in[j] == ']' {
				break
			}
			c.writeByte(',')
			j = skipSpace(c.in, j+1)
		}
	}
	c.writeByte(']')
	return j + 1
}

// writeObject writes the object that comes next in document order.
func (c *canonicalizer) writeObject() int {
	o := c.objects[c.next]
	c.writeByte('{')
	for k, m := range c.members[o.first : o.first+o.count] {
		if k > 0 {
			c.writeByte(',')
		}
		c.writeQuoted(c.in[m.rawStart:m.rawEnd], m.escaped)
		c.writeByte(':')
		c.next = int(m.objects)
		c.writeValue(int(m.value))
	}
	c.writeByte('}')
	c.next = int(o.after)
	return int(o.end)
}

// writeStringValue writes the string whose opening quote is at i and returns the offset past its
// closing quote.
func (c *canonicalizer) writeStringValue(i int) int {
	rest := c.in[i+1:]
	q := bytes.IndexByte(rest, '"')
	if bytes.IndexByte(rest[:q], '\\') < 0 {
		// Without escapes the string is its own canonical form: the first pass refused raw
		// control characters and invalid UTF-8, and RFC 8785 writes everything else as it is.
		c.write(c.in[i : i+q+2])
		return i + q + 2
	}
	// With escapes, the first quote found may be an escaped one: find the real end.
	j := i + 1
	for c.in[j] != '"' {
		if c.in[j] == '\\' {
			_, size := unescape(c.in[j:])
			j += size
		} else {
			j++
		}
	}
	c.writeQuoted(c.in[i+1:j], true)
	return j + 1
}

// writeQuoted writes a checked string's contents (between its quotes) as RFC 8785 does: the
// characters as they are, but '"' and '\' escaped, control characters as \b \t \n \f \r or \u00xx,
// every other escape decoded.
func (c *canonicalizer) writeQuoted(raw []byte, escaped bool) {
	c.writeByte('"')
	for escaped && len(raw) > 0 {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			break
		}
		c.write(raw[:k])
		r, size := unescape(raw[k:])
		c.writeRune(r)
		raw = raw[k+size:]
	}
	c.write(raw)
	c.writeByte('"')
}

func (c *canonicalizer) writeRune(r rune) {
	switch r {
	case '"':
		c.writeText(`\"`)
	case '\\':
		c.writeText(`\\`)
	case '\b':
		c.writeText(`\b`)
	case '\f':
		c.writeText(`\f`)
	case '\n':
		c.writeText(`\n`)
	case '\r':
		c.writeText(`\r`)
	case '\t':
		c.writeText(`\t`)
	default:
		c.reserve(utf8.UTFMax + 2)
		if r < 0x20 {
			const hex = "0123456789abcdef"
			c.out = append(c.out, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
		} else {
			c.out = utf8.AppendRune(c.out, r)
		}
	}
}

// The output buffer. write may hand a large piece of the body straight to w; the others copy,
// so that what they are given (often on the stack) never escapes.

func (c *canonicalizer) write(b []byte) {
	if len(c.out)+len(b) > cap(c.out) {
		c.flush()
		if len(b) > cap(c.out) {
			c.send(b)
			return
		}
	}
	c.out = append(c.out, b...)
}

func (c *canonicalizer) writeText(s string) {
	for len(s) > 0 {
		if len(c.out) == cap(c.out) {
			c.flush()
		}
		k := min(len(s), cap(c.out)-len(c.out))
		c.out = append(c.out, s[:k]...)
		s = s[k:]
	}
}

func (c *canonicalizer) writeByte(b byte) {
	if len(c.out) == cap(c.out) {
		c.flush()
	}
	c.out = append(c.out, b)
}

func (c *canonicalizer) writeUint(u uint64) {
	c.reserve(20)
	c.out = strconv.AppendUint(c.out, u, 10)
}

// reserve makes room for n bytes in the buffer.
func (c *canonicalizer) reserve(n int) {
	if cap(c.out)-len(c.out) < n {
		c.flush()
	}
}

func (c *canonicalizer) flush() {
	c.send(c.out)
	c.out = c.out[:0]
}

func (c *canonicalizer) send(b []byte) {
	if c.werr == nil && len(b) > 0 {
		_, c.werr = c.w.Write(b)
	}
}
