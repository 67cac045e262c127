// Package clientaddr finds the address a request comes from, for the servers of the pgsaga
// command (serve, console): the TCP peer, or behind a reverse proxy the operator trusts, the
// client that proxy names in X-Forwarded-For.
//
// X-Forwarded-For is read only when the peer is a trusted proxy, and then from the right: each
// proxy appends the address it received the request from, so the rightmost hop that is not a
// trusted proxy is the client as far as trusted parties know. Whatever a client writes in the
// header itself stands to the left of that hop and is never taken.
package clientaddr

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver finds a request's client address. The zero Resolver and a nil *Resolver trust no
// proxy: the client is the TCP peer.
type Resolver struct {
	trusted []netip.Prefix
}

// Parse reads a --trusted-proxies value: CIDR prefixes (10.0.0.0/8, fd00::/8) or single
// addresses (192.0.2.1), separated by commas. An empty list trusts no proxy.
func Parse(list string) (*Resolver, error) {
	r := &Resolver{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if prefix, err := netip.ParsePrefix(item); err == nil {
			r.trusted = append(r.trusted, prefix.Masked())
			continue
		}
		addr, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", item)
		}
		addr = addr.Unmap()
		r.trusted = append(r.trusted, netip.PrefixFrom(addr, addr.BitLen()))
	}
	return r, nil
}

// Trusted is the number of prefixes r trusts.
func (r *Resolver) Trusted() int {
	if r == nil {
		return 0
	}
	return len(r.trusted)
}

// Of is the address req comes from, without a port: the peer's, unless the peer is a trusted
// proxy, in which case the rightmost X-Forwarded-For hop that is not a trusted proxy. A hop
// that is not an address ends the walk: the last trusted hop is then the client.
func (r *Resolver) Of(req *http.Request) string {
	peer := peerAddr(req.RemoteAddr)
	addr, err := netip.ParseAddr(peer)
	if err != nil || !r.trusts(addr) {
		return peer
	}
	hops := strings.Split(strings.Join(req.Header.Values("X-Forwarded-For"), ","), ",")
	client := addr
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = hop.Unmap()
		if !r.trusts(client) {
			break
		}
	}
	return client.String()
}

func (r *Resolver) trusts(addr netip.Addr) bool {
	if r == nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range r.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// peerAddr is a RemoteAddr without its port.
func peerAddr(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}
