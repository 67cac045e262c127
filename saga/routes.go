package saga

import "net/http"

// RouteErrors serves mux, answering a request that none of its routes matches as problem
// details, like every other error pgsaga answers: 404 not_found, or 405 method_not_allowed with
// the mux's Allow header, instead of the mux's plain text.
func RouteErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		mux.ServeHTTP(probe, r)
		if probe.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", probe.header.Get("Allow"))
			WriteError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.EscapedPath())
			return
		}
		WriteError(w, http.StatusNotFound, codeNotFound, "no such resource: "+r.URL.EscapedPath())
	})
}

// The codes of RouteErrors' answers.
const (
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
)

// statusProbe records the status the mux would answer, and discards the body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(status int)      { p.status = status }
