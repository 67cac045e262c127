package saga

import (
	"errors"
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/pgsaga/pgsaga/internal/idemkey"
)

// errKeyMissing is returned by parseKeyHeader when a request carries no Idempotency-Key.
var errKeyMissing = errors.New("the Idempotency-Key header is required")

// errKeyInvalid is returned for a key that is not 8–255 characters from '!' to '~' (without '"'
// and '\'), or a header that is neither such a bare key nor an RFC 8941 string holding one.
var errKeyInvalid = errors.New(`the Idempotency-Key must be 8-255 visible ASCII characters (no '"' or '\'), bare or as an RFC 8941 string`)

// parseKeyHeader reads the Idempotency-Key header values of a request. A key may be sent bare
// (Idempotency-Key: 4f1c…) or as an RFC 8941 string (Idempotency-Key: "4f1c…"); both spellings
// are the same key. More than one header value is invalid.
func parseKeyHeader(values []string) (string, error) {
	switch {
	case len(values) == 0:
		return "", errKeyMissing
	case len(values) > 1:
		return "", errKeyInvalid
	}
	raw := strings.TrimSpace(values[0])
	if raw == "" {
		return "", errKeyMissing
	}
	key := raw
	if strings.HasPrefix(raw, `"`) {
		item, err := httpsfv.UnmarshalItem([]string{raw})
		if err != nil {
			return "", errKeyInvalid
		}
		s, ok := item.Value.(string)
		if !ok || len(item.Params.Names()) > 0 {
			return "", errKeyInvalid
		}
		key = s
	}
	if err := validateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// validateKey checks a key's length and alphabet.
func validateKey(key string) error {
	if idemkey.Problem(key) != "" {
		return errKeyInvalid
	}
	return nil
}
