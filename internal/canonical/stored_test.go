package canonical

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A key's fingerprint is stored with it, and a retry matches only if its body fingerprints the
// same, so the fingerprint of a body must never change: a change would answer every retry of a
// stored key 422. testdata/fingerprints.txt pins it for a corpus (the tests' bodies, the fuzz
// seeds and what fuzzing found): one body a line, Go-quoted, after its fingerprint in hex or
// "refused". The file is written once and never regenerated; a canonicalizer that changes a line
// needs a migration of the stored fingerprints, not a new file.
func TestStoredFingerprintsDoNotChange(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/fingerprints.txt")
	require.NoError(t, err)
	defer f.Close()
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	n := 0
	for lines.Scan() {
		want, quoted, ok := strings.Cut(lines.Text(), " ")
		require.True(t, ok, "line %d", n+1)
		body, err := strconv.Unquote(quoted)
		require.NoError(t, err, "line %d", n+1)
		for name, fingerprint := range map[string]func([]byte) ([]byte, error){"Fingerprint": Fingerprint, "plain": plainFingerprint} {
			got, err := fingerprint([]byte(body))
			if want == "refused" {
				require.Error(t, err, "%s of %q", name, body)
				continue
			}
			require.NoError(t, err, "%s of %q", name, body)
			require.Equal(t, want, hex.EncodeToString(got), "%s of %q", name, body)
		}
		n++
	}
	require.NoError(t, lines.Err())
	require.Greater(t, n, 500)
}
