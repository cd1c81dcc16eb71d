package core

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddr is the address a request comes from (CONTRACT section 12): the
// connection's peer, or, when the peer is a trusted proxy, the rightmost
// X-Forwarded-For hop that is not one. Hops left of the first untrusted
// one are the client's own words and are never believed.
func (s *Server) ClientAddr(r *http.Request) string {
	return clientAddrOf(r, s.Opts.TrustedProxies)
}

func clientAddrOf(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if len(trusted) == 0 || !isTrusted(host, trusted) {
		return host
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			hop := strings.TrimSpace(parts[j])
			a, err := netip.ParseAddr(hop)
			if err != nil {
				// A hop that is no address ends the chain: what the trusted
				// proxy saw is all that can be said.
				return host
			}
			if !isTrusted(hop, trusted) {
				return a.Unmap().String()
			}
			host = a.Unmap().String()
		}
	}
	return host
}

func isTrusted(addr string, trusted []netip.Prefix) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
