// Package idemkey holds the one rule for an Idempotency-Key's value (8 to 255 characters from
// '!' to '~' except '"' and '\\'), shared by the server (saga) and the client so that both
// refuse the same keys.
package idemkey

import "fmt"

// Length bounds, in characters.
const (
	MinLength = 8
	MaxLength = 255
)

// Problem says what is wrong with key, or returns "" when it is 8–255 characters from '!' to
// '~' except '"' and '\' (so it can be sent bare or as an RFC 8941 string without escapes).
func Problem(key string) string {
	if len(key) < MinLength || len(key) > MaxLength {
		return fmt.Sprintf("key must be %d-%d characters, got %d", MinLength, MaxLength, len(key))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < '!' || c > '~' || c == '"' || c == '\\' {
			return fmt.Sprintf("key has a forbidden character at position %d", i)
		}
	}
	return ""
}
