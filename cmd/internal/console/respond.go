package console

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/pgsaga/pgsaga/internal/pgavail"
	"github.com/pgsaga/pgsaga/saga"
)

// Error codes of the console's JSON errors, problem details (saga.WriteError).
const (
	codeUnauthenticated = "unauthenticated"
	codeCSRF            = "csrf_token_invalid"
	codeNotFound        = "not_found"
	codeInvalidRequest  = "invalid_request"
	codeInternal        = "internal_error"
	// codeTooManyAttempts: sign-ins from this address (or naming this operator) are throttled.
	codeTooManyAttempts        = "too_many_attempts"
	codeTemporarilyUnavailable = "temporarily_unavailable"
)

// pageCSP is the policy of the console's own pages: nothing but the console's own stylesheet and
// images, no script at all (inline or not: the pages work without JavaScript), no framing, and
// forms that post only back to the console.
const pageCSP = "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// riverCSP is riverui's policy: its React app loads its scripts and stylesheet from /river/
// ('self'), calls its API there, and sets style attributes and inline <style> elements at run
// time (its components and graph library), so styles need 'unsafe-inline'; its icons are
// data: URIs. Still no script from anywhere else, no inline script, no eval (its validation
// library probes for eval and falls back when refused; the browser logs that refusal), and no
// framing.
const riverCSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if strings.HasPrefix(r.URL.Path, riverPrefix+"/") {
			h.Set("Content-Security-Policy", riverCSP)
		} else {
			h.Set("Content-Security-Policy", pageCSP)
		}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			// Pages show payment state: no cache keeps a copy after logout.
			h.Set("Cache-Control", "no-store")
		}
		h.Add("Vary", "Accept")
		next.ServeHTTP(w, r)
	})
}

// wantsHTML reports whether the client asked for a page: its Accept header prefers text/html to
// application/json. Scripts (no Accept, */*, application/json) get JSON.
func wantsHTML(r *http.Request) bool {
	html, js := 0.0, 0.0
	for _, part := range strings.Split(strings.Join(r.Header.Values("Accept"), ","), ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(s, 64); err == nil {
				q = v
			}
		}
		switch mediaType {
		case "text/html":
			html = max(html, q)
		case "application/json":
			js = max(js, q)
		}
	}
	return html > js
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		saga.WriteError(w, http.StatusInternalServerError, codeInternal, "the answer could not be encoded")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail answers an error: problem details for a script, a page for a browser.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	if !wantsHTML(r) {
		saga.WriteError(w, status, code, message)
		return
	}
	c.render(w, r, status, "error", &errorView{Status: status, StatusText: http.StatusText(status), Code: code, Message: message})
}

// internalError logs err and answers without its details: 503 with Retry-After when the
// database could not serve (down, or a standby during a failover), which a retry may change, and
// 500 otherwise.
func (c *Console) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	c.cfg.Logger.ErrorContext(r.Context(), "console: "+what, "path", r.URL.Path, "error", err)
	if pgavail.Unavailable(err) && r.Context().Err() == nil {
		w.Header().Set("Retry-After", "1")
		c.fail(w, r, http.StatusServiceUnavailable, codeTemporarilyUnavailable, "The database did not answer while "+what+": try again in a moment.")
		return
	}
	c.fail(w, r, http.StatusInternalServerError, codeInternal, "Something went wrong while "+what+"; the console's log says what.")
}

// staticFiles serves the embedded stylesheet and icon; no directory listings.
func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}
