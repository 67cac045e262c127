package shop

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pgsaga/pgsaga/saga"
)

// maxName is the longest location, product or order id the shop takes.
const maxName = 64

// validName reports whether s can name a location, a product or an order: 1-64 bytes of valid
// UTF-8 without control characters or slashes.
func validName(s string) bool {
	if s == "" || len(s) > maxName || !utf8.ValidString(s) || strings.ContainsRune(s, '/') {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkedPathValues answers 404 not_found, after authentication and without storing anything,
// for a route whose wildcards hold what no location or order can be named, before the
// operation's handler keeps them with the key.
func checkedPathValues(scope saga.ScopeFunc, next http.Handler) http.Handler {
	notFound := saga.Authenticated(scope, func(w http.ResponseWriter, r *http.Request, _ saga.Scope) {
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such resource: "+r.URL.EscapedPath())
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range []string{"location", "id", "sku"} {
			if v := r.PathValue(name); v != "" && !validName(v) {
				notFound.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		saga.WriteError(w, http.StatusInternalServerError, saga.CodeInternal, "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
