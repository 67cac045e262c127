package saga

import (
	"crypto/sha256"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Fingerprint is the sha256 of the RFC 8785 (JCS) canonical form of a JSON body, so that
// retries that differ only in member order, white space or number spelling (1.0, 1e0, 1) match,
// while any change of value does not. It fails on a body that is not JSON.
func Fingerprint(body []byte) ([]byte, error) {
	canonical, err := jcs.Transform(body)
	if err != nil {
		return nil, fmt.Errorf("error canonicalising JSON: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return sum[:], nil
}
