package clientaddr

import (
	"math/rand/v2"
	"net"
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
			if got := Of(r, trusted); got != tc.want {
				t.Errorf("client %q, want %q", got, tc.want)
			}
		})
	}
}

// clientAddrSplit is clientAddrOf as it was before it parsed each hop once
// without splitting: the oracle of TestClientAddressAgreesWithSplitting.
func clientAddrSplit(r *http.Request, trusted []netip.Prefix) string {
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

// TestClientAddressAgreesWithSplitting: over 50,000 generated requests
// (trusted and untrusted peers, IPv4, IPv6 in several spellings, mapped
// and zoned addresses, garbage, empty and space-padded hops, several
// header lines), the address is the one the splitting version gave.
func TestClientAddressAgreesWithSplitting(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("2001:db8:ffff::/48")}
	peers := []string{"10.1.2.3:1", "[::1]:80", "192.0.2.7:1234", "[2001:db8:ffff::9]:443", "[::ffff:10.0.0.1]:8", "not-an-address", "10.1.2.3"}
	hops := []string{"203.0.113.1", "10.9.9.9", "2001:db8::1", "2001:DB8:0::1", "2001:db8:ffff::2", "::ffff:203.0.113.5", "::ffff:10.1.1.1",
		"fe80::1%eth0", "::1", "1.2.3.04", "bogus", "", " ", "256.1.1.1", "1.2.3", "0.0.0.0", "::", "[::1]", "10.0.0.1:80"}
	rng := rand.New(rand.NewPCG(31, 7))
	for n := range 50_000 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = peers[rng.IntN(len(peers))]
		for range rng.IntN(3) {
			var line []string
			for range 1 + rng.IntN(4) {
				h := hops[rng.IntN(len(hops))]
				if rng.IntN(3) == 0 {
					h = " " + h + "  "
				}
				line = append(line, h)
			}
			sep := ","
			if rng.IntN(2) == 0 {
				sep = ", "
			}
			r.Header.Add("X-Forwarded-For", strings.Join(line, sep))
		}
		if got, want := Of(r, trusted), clientAddrSplit(r, trusted); got != want {
			t.Fatalf("request %d: peer %q, X-Forwarded-For %q: %q, want %q", n, r.RemoteAddr, r.Header.Values("X-Forwarded-For"), got, want)
		}
	}
}

// BenchmarkClientAddr is a fleet request behind a trusted proxy: the peer
// is the proxy, one X-Forwarded-For hop names the cluster.
func BenchmarkClientAddr(b *testing.B) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1:53412"
	r.Header.Set("X-Forwarded-For", "10.3.13.64")
	b.ReportAllocs()
	for b.Loop() {
		if Of(r, trusted) != "10.3.13.64" {
			b.Fatal("wrong address")
		}
	}
}
