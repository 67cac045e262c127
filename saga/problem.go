package saga

import "github.com/pgsaga/pgsaga/internal/problem"

// Errors are RFC 9457 problem details. Every error pgsaga answers or stores, and every error of
// a handler that uses WriteError or ProblemBody, is one JSON object:
//
//	{"type":"urn:pgsaga:error:card_declined","title":"Card declined","status":402,
//	 "detail":"the gateway declined the charge","error":"card_declined",
//	 "message":"the gateway declined the charge"}
//
// with Content-Type application/problem+json. The members RFC 9457 defines are there for
// clients that read problem details; error (the stable code) and message (the same text as
// detail) are extension members that clients written for the {"error","message"} shape keep
// reading. Match on error (or on type, which names the same code): title and message are for
// people and their wording may change.

// ProblemBody is the problem details object of an error: status (the HTTP status it is answered
// with), code (the stable error code) and message (for people, never a Go type or a driver's
// text), followed by extensions, extension members of the caller's in the order of their names
// (a payment's id beside a decline). An extension named like a member of the fixed part is left
// out, and so is one that cannot be encoded as JSON. Answer it with Content-Type
// application/problem+json (WriteError does), or store it from a step with phases.Run.RespondError.
func ProblemBody(status int, code, message string, extensions map[string]any) []byte {
	body, _ := problem.Body(status, code, message, extensions)
	return body
}
