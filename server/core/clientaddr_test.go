package core

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestClientAddressBelievesOnlyTrustedProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct{ name, peer, xff, want string }{
		{"an untrusted peer's header is ignored", "192.0.2.7:1234", "203.0.113.1", "192.0.2.7"},
		{"a trusted peer names the client", "10.1.2.3:1", "203.0.113.1", "203.0.113.1"},
		{"the rightmost untrusted hop wins over a spoofed left one", "10.1.2.3:1", "6.6.6.6, 203.0.113.1, 10.9.9.9", "203.0.113.1"},
		{"headers split across lines", "10.1.2.3:1", "6.6.6.6|203.0.113.1", "203.0.113.1"},
		{"all hops trusted: the leftmost proxy", "10.1.2.3:1", "10.2.2.2", "10.2.2.2"},
		{"garbage ends the chain", "10.1.2.3:1", "6.6.6.6, bogus", "10.1.2.3"},
		{"ipv6 loopback proxy", "[::1]:80", "2001:db8::1", "2001:db8::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tc.peer
			for _, h := range strings.Split(tc.xff, "|") {
				r.Header.Add("X-Forwarded-For", h)
			}
			if got := clientAddrOf(r, trusted); got != tc.want {
				t.Errorf("client %q, want %q", got, tc.want)
			}
		})
	}
}
