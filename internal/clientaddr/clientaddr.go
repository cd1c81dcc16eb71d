// Package clientaddr finds the address a request comes from behind
// trusted proxies.
package clientaddr

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Of is the address r comes from: the connection's peer, or, when the
// peer is a trusted proxy, the rightmost X-Forwarded-For hop that is not
// one. Hops left of the first untrusted one are the client's own words and
// are never believed.
func Of(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(trusted) == 0 || !isTrusted(host, trusted) {
		return host
	}
	// Every forwarded request of a fleet comes through here: each hop is
	// parsed once and, for IPv4, named by its own bytes (no allocation).
	hops := r.Header["X-Forwarded-For"]
	for i := len(hops) - 1; i >= 0; i-- {
		rest := hops[i]
		for {
			j := strings.LastIndexByte(rest, ',')
			hop := strings.TrimSpace(rest[j+1:])
			a, err := netip.ParseAddr(hop)
			if err != nil {
				// A hop that is no address ends the chain: what the trusted
				// proxy saw is all that can be said.
				return host
			}
			a = a.Unmap()
			if !trustedAddr(a, trusted) {
				return addrName(hop, a)
			}
			host = addrName(hop, a)
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return host
}

// addrName is a's canonical text, hop when hop is it already: ParseAddr
// takes IPv4 only as four decimal numbers without leading zeros, which is
// how String writes it; IPv6 has many spellings of one address, and an
// admission limit per address must not count them apart.
func addrName(hop string, a netip.Addr) string {
	if a.Is4() && strings.IndexByte(hop, ':') < 0 {
		return hop
	}
	return a.String()
}

func isTrusted(addr string, trusted []netip.Prefix) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	return trustedAddr(a.Unmap(), trusted)
}

func trustedAddr(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
