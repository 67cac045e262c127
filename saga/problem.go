package saga

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

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

// ContentTypeProblem is the media type of every error body (RFC 9457).
const ContentTypeProblem = "application/problem+json"

// problemTypePrefix begins every problem's type: a URN, so that the type names no host (nothing
// to fetch, the same wherever the service runs) and stays the same for a code forever.
const problemTypePrefix = "urn:pgsaga:error:"

// ProblemType is the "type" member of the problem with error code code: urn:pgsaga:error:
// followed by the code, such as urn:pgsaga:error:idempotency_key_reused.
func ProblemType(code string) string { return problemTypePrefix + code }

// ProblemTitle is the "title" member of the problem with error code code: the code in words,
// its first letter upper case ("idempotency_key_reused" is "Idempotency key reused"). It is the
// same for every occurrence of the code, as RFC 9457 asks of a title.
func ProblemTitle(code string) string {
	words := strings.ReplaceAll(code, "_", " ")
	if words == "" {
		return http.StatusText(http.StatusInternalServerError)
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// problem is the fixed part of a problem details object, in the order it is written.
type problem struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Status  int    `json:"status"`
	Detail  string `json:"detail"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// ProblemBody is the problem details object of an error: status (the HTTP status it is answered
// with), code (the stable error code) and message (for people, never a Go type or a driver's
// text), followed by extensions, extension members of the caller's in the order of their names
// (a payment's id beside a decline). An extension named like a member of the fixed part is left
// out. Answer it with Content-Type ContentTypeProblem (WriteError does), or store it with
// phases.Run.RespondRaw.
func ProblemBody(status int, code, message string, extensions map[string]any) []byte {
	body, _ := json.Marshal(problem{Type: ProblemType(code), Title: ProblemTitle(code), Status: status,
		Detail: message, Error: code, Message: message})
	if len(extensions) == 0 {
		return body
	}
	var b bytes.Buffer
	b.Write(body[:len(body)-1])
	names := make([]string, 0, len(extensions))
	for name := range extensions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch name {
		case "type", "title", "status", "detail", "error", "message":
			continue
		}
		value, err := json.Marshal(extensions[name])
		if err != nil {
			continue
		}
		key, _ := json.Marshal(name)
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
