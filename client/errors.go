package client

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RejectedError is a definitive answer other than success from the server (a
// 4xx other than 409 request_in_progress and 429), such as 422
// idempotency_key_reused, 402 card_declined or 404 not_found. Sending the same
// intent again gets the same answer, so it must not be retried as is.
type RejectedError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error code from the JSON body's "error" member, or
	// "" when the body has none.
	Code string
	// Message is the human message from the body's "message" member, or "".
	Message string
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "request rejected with status %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Retryable reports false: the same request gets the same answer.
func (e *RejectedError) Retryable() bool { return false }

// OutcomeUnknownError means the intent was sent but no definitive answer came
// back before the retry budget ran out or the context ended: it may or may
// not have taken effect on the server. The safe next step is to submit the
// same intent again later, with the same key; the server de-duplicates it.
// It says why [Client.Submit] stopped, and unwraps to the last transport or
// context error, if any.
type OutcomeUnknownError struct {
	// Attempts is how many requests were sent.
	Attempts int
	// LastStatus is the status of the last answer (5xx, 429 or 409
	// request_in_progress), or 0 when the last attempt got no answer.
	LastStatus int
	// LastCode is the error code of the last answer, or "".
	LastCode string
	// Reason says why retrying stopped, e.g. "max attempts reached".
	Reason string
	// Err is the last transport error or the context's error, or nil.
	Err error
}

func (e *OutcomeUnknownError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "outcome unknown after %d attempt(s), %s", e.Attempts, e.Reason)
	switch {
	case e.Err != nil:
		fmt.Fprintf(&b, "; last error: %v", e.Err)
	case e.LastStatus != 0 && e.LastCode != "":
		fmt.Fprintf(&b, "; last answer: %d %s", e.LastStatus, e.LastCode)
	case e.LastStatus != 0:
		fmt.Fprintf(&b, "; last answer: %d", e.LastStatus)
	}
	b.WriteString("; retry later with the same key")
	return b.String()
}

// Unwrap returns the last transport or context error, or nil.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// Retryable reports true: submitting the same intent again later is safe
// and is the only way to learn the outcome.
func (e *OutcomeUnknownError) Retryable() bool { return true }

// problem is the JSON error shape of the API: {"error": code, "message": text}.
type problem struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// parseProblem extracts the error code and message from a JSON error body;
// a body that is not such an object yields empty strings.
func parseProblem(body []byte) problem {
	var p problem
	_ = json.Unmarshal(body, &p)
	return p
}
