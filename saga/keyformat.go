package saga

import (
	"errors"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/pgsaga/pgsaga/internal/idemkey"
)

// Key length bounds, in characters.
const (
	MinKeyLength = idemkey.MinLength
	MaxKeyLength = idemkey.MaxLength
)

// ErrKeyMissing is returned by ParseKeyHeader when a request carries no Idempotency-Key.
var ErrKeyMissing = errors.New("the Idempotency-Key header is required")

// ErrKeyInvalid is returned for a key that is not 8–255 characters from '!' to '~' (without '"'
// and '\'), or a header that is neither such a bare key nor an RFC 8941 string holding one.
var ErrKeyInvalid = errors.New(`the Idempotency-Key must be 8-255 visible ASCII characters (no '"' or '\'), bare or as an RFC 8941 string`)

// ParseKeyHeader reads the Idempotency-Key header values of a request. A key may be sent bare
// (Idempotency-Key: 4f1c…) or as an RFC 8941 string (Idempotency-Key: "4f1c…"); both spellings
// are the same key. More than one header value is invalid.
func ParseKeyHeader(values []string) (string, error) {
	switch {
	case len(values) == 0:
		return "", ErrKeyMissing
	case len(values) > 1:
		return "", ErrKeyInvalid
	}
	raw := strings.TrimSpace(values[0])
	if raw == "" {
		return "", ErrKeyMissing
	}
	key := raw
	if strings.HasPrefix(raw, `"`) {
		item, err := httpsfv.UnmarshalItem([]string{raw})
		if err != nil {
			return "", ErrKeyInvalid
		}
		s, ok := item.Value.(string)
		if !ok || len(item.Params.Names()) > 0 {
			return "", ErrKeyInvalid
		}
		key = s
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// ValidateKey checks a key's length and alphabet.
func ValidateKey(key string) error {
	if idemkey.Problem(key) != "" {
		return ErrKeyInvalid
	}
	return nil
}
