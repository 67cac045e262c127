package saga

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
)

// decodeHeader reads what encoding/json reads, for every document, with or without its fast path.
func TestDecodeHeaderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		``, `{}`, ` { } `,
		`{"Content-Type": ["application/json"]}`,
		`{"Content-Type":["application/json"],"Location":["/payments/1"]}`,
		`{"Set-Cookie": ["a=1", "b=2"], "X-Empty": []}`,
		"{\n\t\"A\" :\r [ \"b\" ] }",
		`{"Quoted": ["say \"hi\""]}`,
		`{"Unicode": ["\u00e9t\u00e9", "été"]}`,
		`{"Slash": ["a\/b"]}`,
		`{"A": ["b"], "A": ["c"]}`,
		`{"A": null}`,
		`{"A": ["b"]`, `{"A": ["b",]}`, `{"A": "b"}`, `["A"]`, `{"A": ["b"]} x`, `{"A": [1]}`, `nope`,
	} {
		want := http.Header{}
		wantErr := doc != "" && json.Unmarshal([]byte(doc), &want) != nil
		got, err := decodeHeader([]byte(doc))
		if wantErr {
			require.Error(t, err, "%q", doc)
			continue
		}
		require.NoError(t, err, "%q", doc)
		require.Equal(t, want, got, "%q", doc)
	}
}

func FuzzDecodeHeader(f *testing.F) {
	for _, doc := range []string{`{"Content-Type": ["application/json"]}`, `{"A": ["b", "c"], "D": []}`, `{"Q": ["\"x\""]}`} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		want := http.Header{}
		wantErr := len(doc) > 0 && json.Unmarshal(doc, &want) != nil
		got, err := decodeHeader(doc)
		if wantErr {
			if err == nil {
				t.Fatalf("%q: decoded %v, encoding/json refuses it", doc, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v, encoding/json reads %v", doc, err, want)
		}
		require.Equal(t, want, got, "%q", doc)
	})
}

// Response headers stored in the jsonb column and read back are the headers the response had,
// whatever their names and values hold (escapes, HTML characters, non-ASCII, empty and nil value
// lists): encoding/json's encoding, and PostgreSQL's spelling of it read by decodeHeader.
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
		want, err := json.Marshal(h)
		require.NoError(t, err)
		require.Equal(t, string(want), string(encoded), "stored as encoding/json writes it")
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
