package saga

import (
	"errors"
	"net/http"
	"unicode/utf8"
)

// ScopeFunc returns the authenticated scope of a request. An error answers 401
// unauthenticated, except a *TransientError (what authenticates cannot be reached now, such as
// a database of API keys), which answers 503 temporarily_unavailable with its Retry-After. Take
// the scope from authentication (a verified token, a session), never from the body.
type ScopeFunc func(r *http.Request) (Scope, error)

// Authenticated serves a route that is not an operation (a read beside them) with the request's
// scope, authenticated as Handler authenticates operations: fn runs only with the scope scope
// returns, and a refusal is answered as ScopeFunc says.
func Authenticated(scope ScopeFunc, fn func(w http.ResponseWriter, r *http.Request, scope Scope)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, _, ok := authenticate(w, r, scope, "retry"); ok {
			fn(w, r, s)
		}
	})
}

// authenticate returns r's scope, or answers r as ScopeFunc says and returns the outcome it
// answered; retry is the 503's advice to the client.
func authenticate(w http.ResponseWriter, r *http.Request, scope ScopeFunc, retry string) (Scope, RequestOutcome, bool) {
	s, err := scope(r)
	if temporary := (*TransientError)(nil); errors.As(err, &temporary) {
		w.Header().Set("Retry-After", retryAfter(temporary.RetryAfter))
		WriteError(w, http.StatusServiceUnavailable, CodeTemporarilyUnavailable, "the request could not be authenticated now; "+retry)
		return Scope{}, outcomeUnavailable, false
	}
	if err != nil {
		WriteError(w, http.StatusUnauthorized, CodeUnauthenticated, err.Error())
		return Scope{}, outcomeRejected, false
	}
	return s, "", true
}

// The headers HeaderScope reads.
const (
	headerTenant = "X-Tenant-ID"
	headerActor  = "X-Actor-ID"
)

// HeaderScope is a ScopeFunc that takes the scope from X-Tenant-ID and X-Actor-ID, 1-64
// characters of UTF-8 each, which anyone can set: a stand-in for authentication in tests and
// local experiments, never for a service that others can reach.
func HeaderScope(r *http.Request) (Scope, error) {
	tenant, actor := r.Header.Get(headerTenant), r.Header.Get(headerActor)
	if !scopePart(tenant) || !scopePart(actor) {
		return Scope{}, errors.New(headerTenant + " and " + headerActor + " (1-64 characters each) are required")
	}
	return Scope{Tenant: tenant, Actor: actor}, nil
}

func scopePart(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= 64 && utf8.ValidString(s)
}
