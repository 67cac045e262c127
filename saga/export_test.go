package saga

import "github.com/pgsaga/pgsaga/internal/idemkey"

// The key header's parser and its rules, for the external tests.
var (
	ParseKeyHeader = parseKeyHeader
	ValidateKey    = validateKey
	ErrKeyMissing  = errKeyMissing
	ErrKeyInvalid  = errKeyInvalid
)

// The key length bounds, for the external tests.
const (
	MinKeyLength = idemkey.MinLength
	MaxKeyLength = idemkey.MaxLength
)

// ErrNotSingleTransaction is what RunTx returns for a phased operation, for the external tests.
var ErrNotSingleTransaction = errNotSingleTransaction
