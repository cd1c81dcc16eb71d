package connlimit

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// serveEcho accepts on l and answers each connection's bytes until it ends.
func serveEcho(t *testing.T, l *Listener) {
	t.Helper()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
}

// dialFrom opens a connection to addr from the loopback address from; nil
// when the dial itself was reset (a refused connection can be closed
// before the handshake has finished on the client's side).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Logf("dial from %s: %v", from, err)
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// alive says whether c is still served: a byte sent comes back.
func alive(c net.Conn) bool {
	if c == nil {
		return false
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte{'x'}); err != nil {
		return false
	}
	b := make([]byte, 1)
	_, err := io.ReadFull(c, b)
	return err == nil
}

func newListener(t *testing.T, opts Options) (*Listener, *Metrics) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	l := Wrap(inner, opts, m)
	serveEcho(t, l)
	return l, m
}

// waitOpen waits for the listener to hold n connections (Accept runs in
// its own goroutine).
func waitOpen(t *testing.T, l *Listener, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", l.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCount waits up to 2 s for c to reach want (the refusal is counted in
// the accept loop, which may run after the client saw its connection
// closed) and returns its value.
func waitCount(c prometheus.Counter, want float64) float64 {
	deadline := time.Now().Add(2 * time.Second)
	for testutil.ToFloat64(c) < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return testutil.ToFloat64(c)
}

func TestPerAddressLimitClosesTheNextConnectionOnly(t *testing.T) {
	const limit = 4
	l, m := newListener(t, Options{Max: 100, PerAddress: limit})
	addr := l.Addr().String()
	var held []net.Conn
	for range limit {
		c := dialFrom(t, "127.0.0.2", addr)
		if !alive(c) {
			t.Fatal("a connection within the per-address limit was not served")
		}
		held = append(held, c)
	}
	past := dialFrom(t, "127.0.0.2", addr)
	if alive(past) {
		t.Fatalf("connection %d from one address was served, want it closed at once", limit+1)
	}
	if got := waitCount(m.Refused.WithLabelValues(ReasonAddress), 1); got != 1 {
		t.Fatalf("refused{address} = %v, want 1", got)
	}
	if other := dialFrom(t, "127.0.0.3", addr); !alive(other) {
		t.Fatal("another address was refused while one address was at its limit")
	}
	if got := testutil.ToFloat64(m.Open); got != limit+1 {
		t.Fatalf("tidemark_connections_open = %v, want %d", got, limit+1)
	}
	// A closed connection gives its slot back.
	held[0].Close()
	waitOpen(t, l, limit)
	if again := dialFrom(t, "127.0.0.2", addr); !alive(again) {
		t.Fatal("a slot freed by a close was not given to the next connection")
	}
}

func TestTotalLimitRefusesPastIt(t *testing.T) {
	const limit = 3
	l, m := newListener(t, Options{Max: limit, PerAddress: 2})
	addr := l.Addr().String()
	for i := range limit {
		if c := dialFrom(t, netip.AddrFrom4([4]byte{127, 0, 1, byte(i + 1)}).String(), addr); !alive(c) {
			t.Fatalf("connection %d within the total was not served", i+1)
		}
	}
	if c := dialFrom(t, "127.0.2.1", addr); alive(c) {
		t.Fatal("a connection past the total was served")
	}
	if got := waitCount(m.Refused.WithLabelValues(ReasonTotal), 1); got != 1 {
		t.Fatalf("refused{total} = %v, want 1", got)
	}
}

func TestExemptPeersAreNotHeldToThePerAddressLimit(t *testing.T) {
	l, m := newListener(t, Options{Max: 100, PerAddress: 1, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.4/32")}})
	addr := l.Addr().String()
	for i := range 5 {
		if c := dialFrom(t, "127.0.0.4", addr); !alive(c) {
			t.Fatalf("connection %d from a trusted proxy was refused", i+1)
		}
	}
	if got := testutil.ToFloat64(m.Refused.WithLabelValues(ReasonAddress)); got != 0 {
		t.Fatalf("refused{address} = %v, want 0", got)
	}
}

func TestCloseTwiceGivesOneSlotBack(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	w := Wrap(inner, Options{}, nil)
	dialFrom(t, "127.0.0.6", inner.Addr().String())
	sc, err := w.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if w.Open() != 1 {
		t.Fatalf("open = %d after one accept, want 1", w.Open())
	}
	sc.Close()
	sc.Close()
	if w.Open() != 0 {
		t.Fatalf("open = %d after closing one connection twice, want 0", w.Open())
	}
}

func TestANetworkIsAV4Slash24OrAV6Slash64(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"203.0.113.7", "203.0.113.0/24"},
		{"203.0.113.255", "203.0.113.0/24"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
	} {
		if got := network(netip.MustParseAddr(tc.addr)); got.String() != tc.want {
			t.Errorf("network(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	// An IPv4 peer on a dual-stack listener arrives mapped; peer unmaps it.
	mapped := netip.MustParseAddr("::ffff:203.0.113.7").Unmap()
	if got := network(mapped); got.String() != "203.0.113.0/24" {
		t.Errorf("a mapped IPv4 peer's network = %s", got)
	}
}

// TestAnIdleConnectionYieldsOnlyWhenMarkedIdle: without the HTTP
// server's word (ConnState), a connection is never taken for idle; once
// idle, the one idle longest is closed for a new one, and its slot is
// given back once however it is closed afterwards.
func TestAnIdleConnectionYieldsOnlyWhenMarkedIdle(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	m, _ := NewMetrics(prometheus.NewRegistry())
	l := Wrap(inner, Options{Max: 2}, m)
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	// accept dials and says whether the connection was accepted; a refused
	// one never comes out of Accept.
	accept := func() (net.Conn, bool) {
		t.Helper()
		dialFrom(t, "127.0.0.2", inner.Addr().String())
		select {
		case c := <-accepted:
			return c, true
		case <-time.After(500 * time.Millisecond):
			return nil, false
		}
	}
	a, _ := accept()
	b, _ := accept()
	l.ConnState(a, http.StateActive)
	l.ConnState(b, http.StateActive)
	if _, ok := accept(); ok {
		t.Fatal("a third connection was accepted while both were busy")
	}
	l.ConnState(b, http.StateIdle)
	l.ConnState(a, http.StateIdle)
	c, ok := accept()
	if !ok {
		t.Fatal("a new connection was refused while two were idle")
	}
	if l.Open() != 2 || testutil.ToFloat64(m.Evicted) != 1 {
		t.Fatalf("open %d, evicted %v; want 2 and 1", l.Open(), testutil.ToFloat64(m.Evicted))
	}
	b.Close() // the evicted one: its slot was given back already
	if l.Open() != 2 {
		t.Fatalf("closing the evicted connection changed open to %d", l.Open())
	}
	c.Close()
	a.Close()
	if l.Open() != 0 || l.Idle() != 0 {
		t.Fatalf("open %d, idle %d after closing all; want 0", l.Open(), l.Idle())
	}
}

// TestTheEndOfAFloodIsCollected: once a flood (floodSize connections or
// more) is nine tenths closed, the listener has the runtime collect what
// the closed connections left, once; connections coming and going below
// that size never do.
func TestTheEndOfAFloodIsCollected(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	l := Wrap(inner, Options{}, nil)
	collected := make(chan struct{}, 4)
	l.floodSize, l.settle, l.afterFlood = 10, 0, func() { collected <- struct{}{} }
	open := func(n int) []net.Conn {
		var cs []net.Conn
		for range n {
			dialFrom(t, "127.0.0.2", inner.Addr().String())
			c, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	for _, c := range open(9) { // below a flood
		c.Close()
	}
	cs := open(20)
	for _, c := range cs[:17] {
		c.Close()
	}
	select {
	case <-collected:
		t.Fatal("collected with 3 of 20 still open")
	case <-time.After(100 * time.Millisecond):
	}
	cs[17].Close() // 2 of 20 left: the flood has ended
	select {
	case <-collected:
	case <-time.After(2 * time.Second):
		t.Fatal("not collected after the flood ended")
	}
	cs[18].Close()
	cs[19].Close()
	select {
	case <-collected:
		t.Fatal("collected twice for one flood")
	case <-time.After(100 * time.Millisecond):
	}
}
