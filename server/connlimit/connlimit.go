// Package connlimit bounds the connections a replica holds open: in all,
// and per client address. Past a limit a new connection is closed at once
// and counted, so that one address holding thousands of idle connections
// costs the replica a few hundred file descriptors, not its memory, and
// never stalls accepts for everyone else.
//
// golang.org/x/net/netutil's LimitListener bounds the total too, but by
// blocking Accept until a connection closes: new connections then wait in
// the kernel's backlog, unanswered, and cannot be counted. Here a refused
// connection is closed at accept time, which is what a client and an
// operator can see and measure.
package connlimit

import (
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults, as docs/operations.md states them.
const (
	DefaultMax        = 10000
	DefaultPerAddress = 256
)

// Options are the limits. Zero values take the defaults; a negative one
// turns that limit off.
type Options struct {
	Max        int
	PerAddress int
	// Exempt peers (trusted proxies) carry many clients' connections and
	// are not held to PerAddress.
	Exempt []netip.Prefix
}

// Why a connection was refused: the reason label.
const (
	ReasonTotal   = "total"
	ReasonAddress = "address"
)

// Metrics are the two series; register them once per process.
type Metrics struct {
	Open    prometheus.Gauge
	Refused *prometheus.CounterVec
}

// NewMetrics registers tidemark_connections_open and
// tidemark_connections_refused_total{reason} in reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tidemark_connections_open",
			Help: "Client connections open on this replica's listener."}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_connections_refused_total",
			Help: "Client connections closed at accept because a limit was reached: total or per address."}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.Open, m.Refused} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.Refused.WithLabelValues(ReasonTotal)
	m.Refused.WithLabelValues(ReasonAddress)
	return m, nil
}

// Listener wraps a net.Listener with the limits.
type Listener struct {
	net.Listener
	opts Options
	m    *Metrics

	mu     sync.Mutex
	open   int
	byAddr map[netip.Addr]int
}

// Wrap bounds ln's connections; m may be nil (nothing is counted).
func Wrap(ln net.Listener, opts Options, m *Metrics) *Listener {
	if opts.Max == 0 {
		opts.Max = DefaultMax
	}
	if opts.PerAddress == 0 {
		opts.PerAddress = DefaultPerAddress
	}
	return &Listener{Listener: ln, opts: opts, m: m, byAddr: map[netip.Addr]int{}}
}

// Accept returns the next connection within the limits; those past a
// limit are closed and counted, and Accept waits for the next.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := peer(c)
		if reason := l.take(addr); reason != "" {
			// The peer sees its connection closed at once; a reset
			// (linger 0) frees the socket without TIME_WAIT.
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
			if l.m != nil {
				l.m.Refused.WithLabelValues(reason).Inc()
			}
			continue
		}
		if l.m != nil {
			l.m.Open.Inc()
		}
		return &conn{Conn: c, l: l, addr: addr}, nil
	}
}

// take counts a new connection from addr, or says which limit refuses it.
func (l *Listener) take(addr netip.Addr) string {
	perAddr := l.opts.PerAddress > 0 && addr.IsValid() && !l.exempt(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.opts.Max > 0 && l.open >= l.opts.Max {
		return ReasonTotal
	}
	if perAddr {
		if l.byAddr[addr] >= l.opts.PerAddress {
			return ReasonAddress
		}
		l.byAddr[addr]++
	}
	l.open++
	return ""
}

func (l *Listener) release(addr netip.Addr) {
	l.mu.Lock()
	l.open--
	if n, ok := l.byAddr[addr]; ok {
		if n <= 1 {
			delete(l.byAddr, addr)
		} else {
			l.byAddr[addr] = n - 1
		}
	}
	l.mu.Unlock()
	if l.m != nil {
		l.m.Open.Dec()
	}
}

func (l *Listener) exempt(addr netip.Addr) bool {
	for _, p := range l.opts.Exempt {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Open is the number of connections held now.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func peer(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	return netip.Addr{}
}

// conn gives its slot back once, however often it is closed.
type conn struct {
	net.Conn
	l    *Listener
	addr netip.Addr
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}
