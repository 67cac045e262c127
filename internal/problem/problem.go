// Package problem builds RFC 9457 problem details, the body of every error pgsaga answers or
// stores: the errors the engine answers (package saga) and the ones an operation answers while
// keeping its writes (phases.Run.RespondError) come from this one builder.
package problem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// ContentType is the media type of every error body (RFC 9457).
const ContentType = "application/problem+json"

// typePrefix begins every problem's type: a URN, so that the type names no host (nothing to
// fetch, the same wherever the service runs) and stays the same for a code forever.
const typePrefix = "urn:pgsaga:error:"

// Type is the "type" member of the problem with error code code.
func Type(code string) string { return typePrefix + code }

// Title is the "title" member of the problem with error code code: the code in words, its
// first letter upper case.
func Title(code string) string {
	words := strings.ReplaceAll(code, "_", " ")
	if words == "" {
		return http.StatusText(http.StatusInternalServerError)
	}
	return strings.ToUpper(words[:1]) + words[1:]
}

// fixed is the fixed part of a problem details object, in the order it is written.
type fixed struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Status  int    `json:"status"`
	Detail  string `json:"detail"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Reserved reports whether name is a member of the fixed part, which no extension may replace.
func Reserved(name string) bool {
	switch name {
	case "type", "title", "status", "detail", "error", "message":
		return true
	}
	return false
}

// Body is the problem details object of status, code and message, followed by the extension
// members of extensions in the order of their names. An extension named like a member of the
// fixed part is left out. So is one that cannot be encoded as JSON; the error names the first
// such, and the body is whole without it.
func Body(status int, code, message string, extensions map[string]any) ([]byte, error) {
	body, _ := json.Marshal(fixed{Type: Type(code), Title: Title(code), Status: status,
		Detail: message, Error: code, Message: message})
	if len(extensions) == 0 {
		return body, nil
	}
	var b bytes.Buffer
	b.Write(body[:len(body)-1])
	names := make([]string, 0, len(extensions))
	for name := range extensions {
		if !Reserved(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var unencodable error
	for _, name := range names {
		value, err := json.Marshal(extensions[name])
		if err != nil {
			if unencodable == nil {
				unencodable = fmt.Errorf("problem member %q cannot be encoded as JSON: %w", name, err)
			}
			continue
		}
		key, _ := json.Marshal(name)
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), unencodable
}
