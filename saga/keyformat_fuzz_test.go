package saga_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

// FuzzParseKeyHeader: whatever the header, the parser answers without panicking; a key it
// accepts is 8-255 characters from '!' to '~' without '"' and '\'; any such key parses to itself
// bare and as an RFC 8941 string; and it refuses with ErrKeyMissing or ErrKeyInvalid only.
func FuzzParseKeyHeader(f *testing.F) {
	for _, seed := range []string{
		"4f1c2e2a-8d6b-4f7e-9c1e-2b3a4c5d6e7f", `"4f1c2e2a-8d6b"`, "  abcdefgh  ", "!#$%&'()*+,-./:;<=>?@[]^_`{|}~",
		"1234567", strings.Repeat("a", 256), `abcd"efgh`, `abcd\efgh`, `"abcd\"efgh"`, `"abcdefgh`, `"abcdefgh";a=1`,
		"abcdéfgh", "abcd\x01efgh", `"abc"`, `""`, `"`, "\t\"abcdefgh\"\t", `"abcdefgh" `, `"abcdefgh";`, `?"abcdefgh"`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, err := saga.ParseKeyHeader([]string{header})
		if err != nil {
			require.True(t, errors.Is(err, saga.ErrKeyMissing) || errors.Is(err, saga.ErrKeyInvalid), "%q: %v", header, err)
			require.Empty(t, key)
		} else {
			requireWellFormedKey(t, key)
		}
		_, err = saga.ParseKeyHeader([]string{header, header})
		require.ErrorIs(t, err, saga.ErrKeyInvalid, "two values are never one key")

		// The allowed characters of the input, as a key: both spellings are that key.
		candidate := strings.Map(func(r rune) rune {
			if r < '!' || r > '~' || r == '"' || r == '\\' {
				return -1
			}
			return r
		}, header)
		if len(candidate) < saga.MinKeyLength || len(candidate) > saga.MaxKeyLength {
			return
		}
		for _, spelling := range []string{candidate, `"` + candidate + `"`, " " + candidate + "\t"} {
			got, err := saga.ParseKeyHeader([]string{spelling})
			require.NoError(t, err, "%q", spelling)
			require.Equal(t, candidate, got, "%q", spelling)
		}
	})
}

func requireWellFormedKey(t *testing.T, key string) {
	t.Helper()
	require.GreaterOrEqual(t, len(key), saga.MinKeyLength, "%q", key)
	require.LessOrEqual(t, len(key), saga.MaxKeyLength, "%q", key)
	for i := 0; i < len(key); i++ {
		c := key[i]
		require.True(t, c >= 0x21 && c <= 0x7E && c != '"' && c != '\\', "%q has %q at %d", key, c, i)
	}
	require.NoError(t, saga.ValidateKey(key))
}
