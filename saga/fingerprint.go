package saga

import "github.com/pgsaga/pgsaga/internal/canonical"

// fingerprint is the sha256 of the canonical form of a JSON body: RFC 8785 (JCS), except that
// numbers keep their exact decimal value instead of being rounded to IEEE doubles. Retries that
// differ only in member order, white space, string escapes or the spelling of a number (1, 1.0,
// 1e0, 10e-1) get one fingerprint; any change of value gets another, including one a double
// cannot see (9007199254740993 against 9007199254740992, 0.1 against its double's exact value
// 0.1000000000000000055511151231257827…). Where every number is written as its double's shortest
// spelling (all small integers, most decimals people type) the canonical form is byte for byte
// RFC 8785's, so the fingerprint is too.
//
// It fails on a body that is not JSON (RFC 8259), and on what RFC 8785 refuses in JSON: duplicate
// member names (compared after unescaping), invalid UTF-8 or unpaired surrogate escapes in
// strings, numbers beyond the double range (above about 1.8e308, as RFC 8785 requires), and
// nesting deeper than 10000. Unlike RFC 8785 it keeps a tiny number exact rather than
// rounding it to 0, and refuses one whose exponent has more than 9 digits.
//
// It is on every request's path: the canonicalizer (internal/canonical) reads the body twice,
// streams the canonical form into the hash, and allocates only the result once warm.
func fingerprint(body []byte) ([]byte, error) { return canonical.Fingerprint(body) }
