package saga

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/dbtest"
)

// Response headers stored in the jsonb column and read back are the headers the response had,
// whatever their names and values hold (escapes, HTML characters, non-ASCII, empty and nil value
// lists), in PostgreSQL's spelling of the document.
func TestStoredHeadersRoundTripThroughJSONB(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	for _, h := range []http.Header{
		{}, {"Content-Type": {"application/json"}},
		{"Location": {"/payments/1"}, "Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}},
		{"Empty": {}}, {"Nil": nil}, {"Quote": {`say "hi"`, `back\slash`}}, {"Html": {"<b>&"}},
		{"Unicode": {"été", "\u2028", "😂"}}, {"Ctl": {"a\tb\r\n"}}, {"Del": {"\x7f"}}, {"É-Name": {"x"}},
	} {
		_, encoded, _, err := encodeResponse(&Response{Status: http.StatusOK, Header: h})
		require.NoError(t, err)
		var stored []byte
		require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT $1::jsonb`, encoded).Scan(&stored))
		got, err := decodeHeader(stored)
		require.NoError(t, err, "%s", stored)
		require.Equal(t, h, got, "stored as %s", stored)
	}

	// No headers at all are stored as {} and read back as an empty header.
	_, encoded, _, err := encodeResponse(&Response{Status: http.StatusOK})
	require.NoError(t, err)
	require.Equal(t, "{}", string(encoded))
	got, err := decodeHeader(encoded)
	require.NoError(t, err)
	require.Equal(t, http.Header{}, got)
}

func TestDecodeHeader(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{``, `{}`, `null`} {
		h, err := decodeHeader([]byte(doc))
		require.NoError(t, err, "%q", doc)
		require.NotNil(t, h, "%q decodes to a header one can add to", doc)
		require.Empty(t, h, "%q", doc)
	}
	for _, doc := range []string{`{"A": ["b"]`, `{"A": "b"}`, `["A"]`, `{"A": ["b"]} x`, `{"A": [1]}`, `nope`} {
		_, err := decodeHeader([]byte(doc))
		require.Error(t, err, "%q is not a header document", doc)
	}
}

// FuzzDecodeHeader: whatever document decodes as headers is, once stored again and read back,
// the same headers (invalid UTF-8 among them, which encoding/json reads as U+FFFD).
func FuzzDecodeHeader(f *testing.F) {
	for _, doc := range []string{`{"Content-Type": ["application/json"]}`, `{"A": ["b", "c"], "D": []}`, `{"Q": ["\"x\""]}`,
		`{"A": null, "a": ["\u00e9\u003c"]}`, `{"A": ["b"], "A": ["c"]}`} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		h, err := decodeHeader(doc)
		if err != nil {
			return
		}
		require.NotNil(t, h)
		_, stored, _, err := encodeResponse(&Response{Status: http.StatusOK, Header: h})
		require.NoError(t, err, "%v", h)
		again, err := decodeHeader(stored)
		require.NoError(t, err, "%s", stored)
		require.Equal(t, h, again, "%q stored again as %s", doc, stored)
	})
}
