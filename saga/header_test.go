package saga

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
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

// plainJSONHeader writes what encoding/json writes, or declines.
func TestPlainJSONHeaderAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, h := range []http.Header{
		{}, {"Content-Type": {"application/json"}},
		{"Location": {"/payments/1"}, "Content-Type": {"application/json"}, "A": {"x", "y"}},
		{"Empty": {}}, {"Nil": nil}, {"Quote": {`say "hi"`}}, {"Html": {"<b>&"}}, {"Unicode": {"été"}},
		{"Ctl": {"a\tb"}}, {"Del": {"\x7f"}},
	} {
		want, err := json.Marshal(h)
		require.NoError(t, err)
		got, ok := plainJSONHeader(h)
		if ok {
			require.Equal(t, string(want), string(got), "%v", h)
		}
		_, stored, _, err := encodeResponse(&Response{Status: 200, Header: h})
		require.NoError(t, err)
		require.Equal(t, string(want), string(stored), "%v", h)
	}
	_, ok := plainJSONHeader(http.Header{"Content-Type": {"application/json"}})
	require.True(t, ok, "the common header takes the plain path")
}
