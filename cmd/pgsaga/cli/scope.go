package cli

import (
	"errors"
	"net"
	"net/http"

	"github.com/pgsaga/pgsaga/saga"
)

// How serve authenticates its API's requests (BuildParams.Scope): by API key, the default, or
// by headers anyone can set, behind --insecure-scope-headers and only on a loopback address.

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
