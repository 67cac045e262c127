package saga

import (
	"encoding/json"
	"net/http"
)

// Stored response headers are encoding/json's encoding of an http.Header, kept in a jsonb column
// and given back in PostgreSQL's spelling of it: {"Content-Type": ["application/json"]}.
// encoding/json reads and writes them: a hand-written shortcut bought under 5% of a request
// path's throughput (docs/performance.md, "Shortcuts measured").

// decodeHeader reads stored response headers. No document (a response stored without them) and
// null are an empty header, never a nil one: a replay may add to it.
func decodeHeader(b []byte) (http.Header, error) {
	var h http.Header
	if len(b) > 0 {
		if err := json.Unmarshal(b, &h); err != nil {
			return nil, err
		}
	}
	if h == nil {
		h = http.Header{}
	}
	return h, nil
}

// plainJSONHeader encodes response headers as they are stored: encoding/json's encoding of h,
// names sorted, each an array of strings, and {} for no headers (nil included). ok is false only
// if encoding/json fails, which it does not for an http.Header.
func plainJSONHeader(h http.Header) (b []byte, ok bool) {
	if h == nil {
		h = http.Header{}
	}
	b, err := json.Marshal(h)
	return b, err == nil
}
