package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"unicode/utf8"

	"github.com/pgsaga/pgsaga/saga"
)

// How serve authenticates its API's requests (BuildParams.Scope): by API key, the default, or
// by headers anyone can set, behind --insecure-scope-headers and only on a loopback address.

// Scope headers of --insecure-scope-headers.
const (
	headerTenant = "X-Tenant-ID"
	headerActor  = "X-Actor-ID"
)

// insecureHeaderScope takes the scope from X-Tenant-ID and X-Actor-ID (1-64 characters each),
// for local experiments and tests: whoever reaches the port is whoever they say.
func insecureHeaderScope(r *http.Request) (saga.Scope, error) {
	tenant, actor := r.Header.Get(headerTenant), r.Header.Get(headerActor)
	if !scopePartOK(tenant) || !scopePartOK(actor) {
		return saga.Scope{}, fmt.Errorf("%s and %s (1-64 characters each) are required", headerTenant, headerActor)
	}
	return saga.Scope{Tenant: tenant, Actor: actor}, nil
}

func scopePartOK(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= 64 && utf8.ValidString(s)
}

// errNoAPI is the refusal of every request by a command that serves no API.
var errNoAPI = errors.New("this command serves no API")

// noAPIScope is BuildParams.Scope for the commands that serve no API (worker, resume, settle,
// console): a handler built by mistake lets nobody in.
func noAPIScope(*http.Request) (saga.Scope, error) { return saga.Scope{}, errNoAPI }

// requireLoopback refuses (bad usage) an address that is not a loopback one, for the flags
// that make a server trust whoever reaches it: a host that is "localhost" or a loopback IP.
// An empty host (every interface) or another name is refused.
func requireLoopback(flag, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("invalid --addr %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usageErrorf("%s is allowed only with a loopback --addr (127.0.0.1, ::1 or localhost), got %q", flag, addr)
}
