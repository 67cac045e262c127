package apikey

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/pgsaga/pgsaga/saga"
)

// unavailableRetry is the Retry-After of a request whose key could not be read.
const unavailableRetry = time.Second

// Scope authenticates r by the API key in its Authorization header (Bearer) and returns the
// key's scope: a saga.ScopeFunc for saga.HandlerOpts.Scope. A missing, malformed, unknown or
// revoked key is an error (401 unauthenticated); a database that cannot be read is a
// *saga.TransientError (503 temporarily_unavailable).
func (s *Store) Scope(r *http.Request) (saga.Scope, error) {
	secret, ok := BearerToken(r)
	if !ok {
		return saga.Scope{}, ErrUnauthenticated
	}
	scope, err := s.Verify(r.Context(), secret)
	if err != nil && !errors.Is(err, ErrUnauthenticated) {
		return saga.Scope{}, &saga.TransientError{Err: err, RetryAfter: unavailableRetry}
	}
	return scope, err
}

// BearerToken is the token of r's "Authorization: Bearer <token>" header (the scheme in any
// case), and whether there is one.
func BearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
