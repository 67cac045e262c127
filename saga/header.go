package saga

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Stored response headers are a JSON object of string arrays, as encoding/json writes an
// http.Header and PostgreSQL's jsonb gives it back: {"Content-Type": ["application/json"]}.
// decodeHeader reads that shape without encoding/json's reflection: a replay decodes the headers
// of every answer it sends, and encoding/json's reflection there costs about 5% of a replay's
// throughput (docs/performance.md, "Shortcuts measured"). A string with an escape or beyond
// ASCII, or any other shape, is left to encoding/json, so the result is encoding/json's in every
// case.

// errHeaderShape sends a header document to encoding/json.
var errHeaderShape = errors.New("not a plain header document")

func decodeHeader(b []byte) (http.Header, error) {
	h, err := decodeHeaderFast(b)
	if err == nil {
		return h, nil
	}
	h = http.Header{}
	if len(b) == 0 {
		return h, nil
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, err
	}
	return h, nil
}

// decodeHeaderFast decodes b when its strings have no escapes.
func decodeHeaderFast(b []byte) (http.Header, error) {
	p := headerParser{b: b}
	h := http.Header{}
	if len(b) == 0 {
		return h, nil
	}
	if !p.expect('{') {
		return nil, errHeaderShape
	}
	if p.expect('}') {
		return h, p.end()
	}
	for {
		name, ok := p.str()
		if !ok || !p.expect(':') || !p.expect('[') {
			return nil, errHeaderShape
		}
		values := []string{}
		if !p.expect(']') {
			for {
				v, ok := p.str()
				if !ok {
					return nil, errHeaderShape
				}
				values = append(values, v)
				if p.expect(']') {
					break
				}
				if !p.expect(',') {
					return nil, errHeaderShape
				}
			}
		}
		h[name] = values
		if p.expect('}') {
			return h, p.end()
		}
		if !p.expect(',') {
			return nil, errHeaderShape
		}
	}
}

type headerParser struct {
	b []byte
	i int
}

func (p *headerParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// expect consumes c (after white space) if it comes next.
func (p *headerParser) expect(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string of printable ASCII without escapes (encoding/json reads the others).
func (p *headerParser) str() (string, bool) {
	if !p.expect('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

func (p *headerParser) end() error {
	p.space()
	if p.i != len(p.b) {
		return errHeaderShape
	}
	return nil
}

// plainJSONHeader encodes response headers as they are stored: encoding/json's encoding of h,
// names sorted, each an array of strings, and {} for no headers (nil included). It is
// encoding/json itself: a completion encodes once, and a hand-written encoder bought under 1% of
// a request's CPU (docs/performance.md, "Shortcuts measured"). ok is false only if encoding/json
// fails, which it does not for an http.Header.
func plainJSONHeader(h http.Header) (b []byte, ok bool) {
	if h == nil {
		h = http.Header{}
	}
	b, err := json.Marshal(h)
	return b, err == nil
}
