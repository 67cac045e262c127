package saga_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

func TestParseKeyHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values []string
		key    string
		err    error
	}{
		{"bare uuid", []string{"4f1c2e2a-8d6b-4f7e-9c1e-2b3a4c5d6e7f"}, "4f1c2e2a-8d6b-4f7e-9c1e-2b3a4c5d6e7f", nil},
		{"sf-string", []string{`"4f1c2e2a-8d6b"`}, "4f1c2e2a-8d6b", nil},
		{"sf-string and bare are one key", []string{`"abcdefgh"`}, "abcdefgh", nil},
		{"surrounding space", []string{"  abcdefgh  "}, "abcdefgh", nil},
		{"every allowed symbol", []string{"!#$%&'()*+,-./:;<=>?@[]^_`{|}~"}, "!#$%&'()*+,-./:;<=>?@[]^_`{|}~", nil},
		{"exactly 8", []string{"12345678"}, "12345678", nil},
		{"exactly 255", []string{strings.Repeat("a", 255)}, strings.Repeat("a", 255), nil},
		{"missing", nil, "", saga.ErrKeyMissing},
		{"empty", []string{""}, "", saga.ErrKeyMissing},
		{"two headers", []string{"abcdefgh", "abcdefgh"}, "", saga.ErrKeyInvalid},
		{"7 characters", []string{"1234567"}, "", saga.ErrKeyInvalid},
		{"256 characters", []string{strings.Repeat("a", 256)}, "", saga.ErrKeyInvalid},
		{"inner space", []string{"abcd efgh"}, "", saga.ErrKeyInvalid},
		{"quote in bare key", []string{`abcd"efgh`}, "", saga.ErrKeyInvalid},
		{"backslash", []string{`abcd\efgh`}, "", saga.ErrKeyInvalid},
		{"escaped quote in sf-string", []string{`"abcd\"efgh"`}, "", saga.ErrKeyInvalid},
		{"unterminated sf-string", []string{`"abcdefgh`}, "", saga.ErrKeyInvalid},
		{"sf-string with parameters", []string{`"abcdefgh";a=1`}, "", saga.ErrKeyInvalid},
		{"non-ASCII", []string{"abcdéfgh"}, "", saga.ErrKeyInvalid},
		{"control character", []string{"abcd\x01efgh"}, "", saga.ErrKeyInvalid},
		{"short sf-string", []string{`"abc"`}, "", saga.ErrKeyInvalid},
	} {
		key, err := saga.ParseKeyHeader(tc.values)
		if tc.err != nil {
			require.ErrorIs(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.key, key, tc.name)
	}
}
