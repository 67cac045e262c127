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

// The request outcomes, for the external tests.
const (
	OutcomeExecuted    = outcomeExecuted
	OutcomeReplayed    = outcomeReplayed
	OutcomeInProgress  = outcomeInProgress
	OutcomeMismatch    = outcomeMismatch
	OutcomeExpired     = outcomeExpired
	OutcomeRejected    = outcomeRejected
	OutcomeUnavailable = outcomeUnavailable
	OutcomeParked      = outcomeParked
	OutcomeError       = outcomeError
)

// Fingerprint is the canonical fingerprint of a body, for the external tests.
var Fingerprint = fingerprint
