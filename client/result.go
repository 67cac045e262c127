package client

import "net/http"

// Result is the last answer [Client.Submit] got for an intent.
//
// Submit returns a non-nil Result whenever it sent at least one request,
// including alongside a [*RejectedError] (to read the error body) or an
// [*OutcomeUnknownError] (to read Attempts).
type Result struct {
	// Status is the HTTP status of the last answer, or 0 when the last
	// attempt got none (network error, timeout, cancel).
	Status int
	// Header holds the last answer's headers, or nil.
	Header http.Header
	// Body is the last answer's body, or nil.
	Body []byte
	// Replayed reports that the last answer carried Idempotent-Replayed:
	// true: the server had already executed this intent and returned the
	// stored response. It is still the one and only effect.
	Replayed bool
	// Attempts is how many requests Submit sent for this intent.
	Attempts int
}

// ErrorCode returns the "error" member of a JSON error body, or "".
func (r *Result) ErrorCode() string { return parseProblem(r.Body).Error }
