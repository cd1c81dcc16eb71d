package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/connlimit"
)

// loopbackClient speaks HTTP/1.1 keep-alive on connections it opens from
// chosen loopback addresses.
type loopbackClient struct {
	t        *testing.T
	hostport string
}

type heldConn struct {
	net.Conn
	r *bufio.Reader
}

// dial opens a connection from from; nil when it was reset before the
// dial returned (a refused connection can be).
func (lc loopbackClient) dial(from string) *heldConn {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", lc.hostport)
	if err != nil {
		lc.t.Logf("dial from %s: %v", from, err)
		return nil
	}
	lc.t.Cleanup(func() { c.Close() })
	return &heldConn{c, bufio.NewReader(c)}
}

// ask sends one keep-alive request for path on c and says whether it was
// answered 200.
func (lc loopbackClient) ask(c *heldConn, path string) bool {
	if c == nil {
		return false
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, lc.hostport); err != nil {
		return false
	}
	res, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// closed says whether the server has closed c: a read sees the end, not
// its deadline.
func closed(c *heldConn) bool {
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.r.Peek(1)
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// scrape reads /metrics in process: at the connection limit a scrape over
// the network would itself take a slot.
func scrape(srv *Server) string {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

func metricLine(srv *Server, prefix string) string {
	for _, l := range strings.Split(scrape(srv), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return prefix + "absent"
}

func metricIs(srv *Server, series string, want int) bool {
	return strings.Contains(scrape(srv), fmt.Sprintf("%s %d\n", series, want))
}

// waitMetric waits up to 5 s for series to read want (the server counts
// in its own goroutines, after the client has its answer).
func waitMetric(srv *Server, series string, want int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if metricIs(srv, series, want) {
			return true
		}
	}
	return false
}

// TestIdleConnectionsYieldAtTheTotal: with max_connections held by idle
// keep-alive connections, a new connection from another address is
// answered, and the connection idle longest (only it) was closed to admit
// it; only when every connection has a request in flight is a new one
// refused, counted as reason="total" (issue 53 item 1: 40 addresses of
// idle connections locked everyone out, /metrics and /readyz included).
func TestIdleConnectionsYieldAtTheTotal(t *testing.T) {
	const max = 4
	snap := k3sSnapshot(t)
	srv, err := New(Options{
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Connections: connlimit.Options{Max: max, PerAddress: max},
		ReadTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	lc := loopbackClient{t, strings.TrimPrefix(runOnLoopback(t, srv, runOpts{}), "http://")}

	var held []*heldConn
	for i := range max {
		c := lc.dial("127.0.0.2")
		if !lc.ask(c, "/healthz") {
			t.Fatalf("connection %d of %d was not answered", i+1, max)
		}
		held = append(held, c)
		// The server marks a connection idle just after its answer is
		// out: wait for it, so that they are idle in the order opened.
		if !waitMetric(srv, "tidemark_connections_idle", i+1) {
			t.Errorf("after %d answered keep-alive requests: %s, want all idle", i+1, metricLine(srv, "tidemark_connections_idle "))
		}
	}
	others := held[2:]
	for _, path := range []string{"/readyz", "/metrics"} {
		start := time.Now()
		c := lc.dial("127.0.0.3")
		others = append(others, c)
		if !lc.ask(c, path) {
			t.Fatalf("at max_connections, all idle: %s from another address was not answered", path)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s waited %s", path, took)
		}
		waitMetric(srv, "tidemark_connections_idle", max)
	}
	// The two idle longest made way, in that order; the others still serve.
	for i, c := range held {
		if got, want := closed(c), i < 2; got != want {
			t.Errorf("held connection %d closed = %v, want %v", i, got, want)
		}
	}
	if !metricIs(srv, "tidemark_connections_evicted_total", 2) || !metricIs(srv, `tidemark_connections_refused_total{reason="total"}`, 0) {
		t.Errorf("want 2 evicted and none refused:\n%s", scrape(srv))
	}

	// Every connection busy: a request whose body never comes holds its
	// connection. Then the next connection is refused.
	busy := others
	for _, c := range busy {
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n\r\n", lc.hostport)
	}
	if !waitMetric(srv, "tidemark_connections_idle", 0) {
		t.Fatalf("the requests never became in flight: %s", metricLine(srv, "tidemark_connections_idle "))
	}
	if c := lc.dial("127.0.0.5"); lc.ask(c, "/healthz") {
		t.Fatal("with every connection busy, a new one was answered")
	}
	if !waitMetric(srv, `tidemark_connections_refused_total{reason="total"}`, 1) {
		t.Errorf("want one refused, reason total:\n%s", scrape(srv))
	}
	for _, c := range busy {
		if closed(c) {
			t.Error("a busy connection was closed to make way")
		}
	}
}

// TestAddressesShareALimitPerNetwork: connections from several addresses
// of one IPv4 /24 share max_connections_per_network; past it the next is
// closed at once (reason="network") while another /24 and a trusted proxy
// in the same /24 are answered.
func TestAddressesShareALimitPerNetwork(t *testing.T) {
	const perNetwork = 3
	snap := k3sSnapshot(t)
	srv, err := New(Options{
		Load:           func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Connections:    connlimit.Options{Max: 100, PerAddress: 2, PerNetwork: perNetwork},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.7.9/32")},
	})
	if err != nil {
		t.Fatal(err)
	}
	lc := loopbackClient{t, strings.TrimPrefix(runOnLoopback(t, srv, runOpts{}), "http://")}
	for i, from := range []string{"127.0.7.1", "127.0.7.1", "127.0.7.2"} {
		if !lc.ask(lc.dial(from), "/healthz") {
			t.Fatalf("connection %d of %d from 127.0.7.0/24 was not answered", i+1, perNetwork)
		}
	}
	if lc.ask(lc.dial("127.0.7.3"), "/healthz") {
		t.Fatalf("connection %d from 127.0.7.0/24 was answered, want it closed at once", perNetwork+1)
	}
	if !lc.ask(lc.dial("127.0.8.1"), "/healthz") {
		t.Error("another /24 was refused")
	}
	for range perNetwork + 1 {
		if !lc.ask(lc.dial("127.0.7.9"), "/healthz") {
			t.Error("a trusted proxy in the full /24 was refused")
		}
	}
	waitMetric(srv, `tidemark_connections_refused_total{reason="network"}`, 1)
	if m := scrape(srv); !strings.Contains(m, `tidemark_connections_refused_total{reason="network"} 1`+"\n") || !strings.Contains(m, `tidemark_connections_refused_total{reason="address"} 0`+"\n") {
		t.Errorf("want one refused for network, none for address:\n%s", m)
	}
}
