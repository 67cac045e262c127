package cli

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"

	"github.com/pgsaga/pgsaga/cmd/internal/clientaddr"
	"github.com/pgsaga/pgsaga/cmd/internal/refusal"
	"github.com/pgsaga/pgsaga/internal/apikey"
	"github.com/pgsaga/pgsaga/saga"
)

// Reasons of a refused API request, as pgsaga_auth_failures_total{surface="api"} counts them.
const (
	// reasonMissingKey: no "Authorization: Bearer" header.
	reasonMissingKey = "missing_key"
	// reasonInvalidKey: a key that is malformed, unknown or revoked (which of these is not said).
	reasonInvalidKey = "invalid_key"
	// reasonMissingScopeHeaders: --insecure-scope-headers without valid X-Tenant-ID and X-Actor-ID.
	reasonMissingScopeHeaders = "missing_scope_headers"
)

// apiAuth is how serve authenticates its API's requests (BuildParams.Scope) and names their
// party for the admission: by API key, or with --insecure-scope-headers by the headers.
type apiAuth struct {
	keys     *apikey.Store // nil with --insecure-scope-headers
	known    *knownSecrets
	refusals *refusal.Recorder
	clients  *clientaddr.Resolver
}

// scope is the ScopeFunc of serve's API. A refusal is recorded (counted, logged at a rate); a
// key that authenticates is remembered with its tenant, so that its next requests take their
// tenant's share of the slots.
func (a *apiAuth) scope(r *http.Request) (saga.Scope, error) {
	if a.keys == nil {
		scope, err := saga.HeaderScope(r)
		if err != nil {
			a.refused(r, reasonMissingScopeHeaders)
		}
		return scope, err
	}
	scope, err := a.keys.Scope(r)
	secret, presented := apikey.BearerToken(r)
	switch {
	case err == nil:
		a.known.learn(secret, scope.Tenant)
	case errors.Is(err, apikey.ErrUnauthenticated) && !presented:
		a.refused(r, reasonMissingKey)
	case errors.Is(err, apikey.ErrUnauthenticated):
		a.refused(r, reasonInvalidKey)
	}
	return scope, err
}

func (a *apiAuth) refused(r *http.Request, reason string) {
	a.refusals.Refused(r.Context(), "api", reason, a.clients.Of(r), "method", r.Method, "path", r.URL.Path)
}

// party is the request's party by its credentials alone, without reading anything: the tenant
// of a secret that authenticated before, the tenant the scope headers name, else "".
func (a *apiAuth) party(r *http.Request) string {
	if a.keys == nil {
		if tenant := r.Header.Get("X-Tenant-ID"); tenant != "" {
			return "tenant:" + tenant
		}
		return ""
	}
	secret, ok := apikey.BearerToken(r)
	if !ok {
		return ""
	}
	if tenant, ok := a.known.tenantOf(secret); ok {
		return "tenant:" + tenant
	}
	return ""
}

// maxKnownSecrets bounds knownSecrets: far more keys than a service has in use at once.
const maxKnownSecrets = 100_000

// knownSecrets are the API key secrets that authenticated in this process, by SHA-256 (the
// form the database keeps them in), with their tenant. A secret learned here is never taken as
// authentication (every request reads its key, so a revoke takes effect at once): it only says
// whose share of the slots a request will count against before the key is read.
type knownSecrets struct {
	mu      sync.Mutex
	tenants map[[sha256.Size]byte]string
}

func newKnownSecrets() *knownSecrets {
	return &knownSecrets{tenants: map[[sha256.Size]byte]string{}}
}

func (k *knownSecrets) learn(secret, tenant string) {
	sum := sha256.Sum256([]byte(secret))
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.tenants[sum]; !ok && len(k.tenants) >= maxKnownSecrets {
		for old := range k.tenants { // forget one: it is learned again by its next request
			delete(k.tenants, old)
			break
		}
	}
	k.tenants[sum] = tenant
}

func (k *knownSecrets) tenantOf(secret string) (string, bool) {
	sum := sha256.Sum256([]byte(secret))
	k.mu.Lock()
	defer k.mu.Unlock()
	tenant, ok := k.tenants[sum]
	return tenant, ok
}
