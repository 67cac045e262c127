package payments

import (
	"log/slog"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pgsaga/pgsaga/saga"
)

// Ids from a client (a path segment, a query parameter) reach SQL as text, and the database
// refuses some text outright: a NUL, invalid UTF-8. An id that no row can have is answered as
// an unknown id, 404 not_found, whatever its shape, never with the database's refusal.

// maxID is longer than any id the service makes (a prefix and 26 characters).
const maxID = 255

// possibleID reports whether id could name a row: 1-255 bytes of valid UTF-8 without control
// characters.
func possibleID(id string) bool {
	return id != "" && len(id) <= maxID && storableText(id)
}

// maxStoredPath is the longest request path the engine keeps with a key.
const maxStoredPath = 2048

// storablePath hands an operation whose path carries an id (POST /orders/{id}/complete) a path
// the key table can store: one that is not valid UTF-8 or holds a NUL is given in its escaped
// form (%00, %FF), which names no row, so the operation answers (and stores) its 404 like for
// any unknown id, after the idempotency checks, in their order. A path too long to store names
// no row either: once the request is authenticated it is answered 404 at once, storing nothing.
func storablePath(scope saga.ScopeFunc, next http.Handler) http.Handler {
	tooLong := saga.Authenticated(scope, func(w http.ResponseWriter, _ *http.Request, _ saga.Scope) {
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such resource")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !utf8.ValidString(r.URL.Path) || strings.ContainsRune(r.URL.Path, 0) {
			u := *r.URL
			u.Path, u.RawPath = r.URL.EscapedPath(), ""
			r2 := *r
			r2.URL = &u
			r = &r2
		}
		if len(r.URL.Path) > maxStoredPath {
			tooLong.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// storableText reports whether s is valid UTF-8 without control characters.
func storableText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func (s *Service) logger() *slog.Logger {
	if s.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.cfg.Logger
}
