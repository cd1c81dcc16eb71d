// Package connlimit bounds the connections a replica holds open: in all,
// per client address and per client network. Past the total, the
// connection idle longest is closed to admit the new one; only when none
// is idle, or past a per-address or per-network limit, is a new
// connection closed at once and counted. So addresses holding thousands
// of idle connections cost the replica file descriptors, not its memory,
// and never lock anyone else out.
//
// golang.org/x/net/netutil's LimitListener bounds the total too, but by
// blocking Accept until a connection closes: new connections then wait in
// the kernel's backlog, unanswered, and cannot be counted. Here a refused
// connection is closed at accept time, which is what a client and an
// operator can see and measure.
package connlimit

import (
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults, as docs/operations.md states them.
const (
	DefaultMax        = 10000
	DefaultPerAddress = 256
	DefaultPerNetwork = 1024
)

// A network is an IPv4 /24 or an IPv6 /64: what one party usually holds,
// so that an attacker spreading over its addresses still shares one limit.
const (
	networkBits4 = 24
	networkBits6 = 64
)

// Options are the limits. Zero values take the defaults; a negative one
// turns that limit off.
type Options struct {
	Max        int
	PerAddress int
	PerNetwork int
	// Exempt peers (trusted proxies) carry many clients' connections and
	// are held to neither PerAddress nor PerNetwork.
	Exempt []netip.Prefix
}

// Why a connection was refused: the reason label.
const (
	ReasonTotal   = "total"
	ReasonAddress = "address"
	ReasonNetwork = "network"
)

// Metrics are the series; register them once per process.
type Metrics struct {
	Open    prometheus.Gauge
	Idle    prometheus.Gauge
	Refused *prometheus.CounterVec
	Evicted prometheus.Counter
}

// NewMetrics registers tidemark_connections_open,
// tidemark_connections_idle, tidemark_connections_refused_total{reason}
// and tidemark_connections_evicted_total in reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tidemark_connections_open",
			Help: "Client connections open on this replica's listener."}),
		Idle: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tidemark_connections_idle",
			Help: "Open client connections with no request in flight: those that yield, idle longest first, at max_connections."}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_connections_refused_total",
			Help: "Client connections closed at accept because a limit was reached: total (none idle), per address or per network."}, []string{"reason"}),
		Evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "tidemark_connections_evicted_total",
			Help: "Idle keep-alive connections closed to admit a new one at max_connections."}),
	}
	for _, c := range []prometheus.Collector{m.Open, m.Idle, m.Refused, m.Evicted} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{ReasonTotal, ReasonAddress, ReasonNetwork} {
		m.Refused.WithLabelValues(r)
	}
	return m, nil
}

// Listener wraps a net.Listener with the limits. Which connections are
// idle it learns from ConnState, which http.Server calls.
type Listener struct {
	net.Listener
	opts Options
	m    *Metrics

	mu    sync.Mutex
	open  int
	byAdr map[netip.Addr]int
	byNet map[netip.Prefix]int
	// idle holds the connections with no request in flight, the one idle
	// longest first (a list threaded through the conns themselves).
	idle idleList
	// peak is the most connections open since the last collection after a
	// flood; afterFlood runs when a flood of floodSize or more has ended.
	peak       int
	floodSize  int
	settle     time.Duration // from a flood's end to afterFlood
	afterFlood func()
}

// Wrap bounds ln's connections; m may be nil (nothing is counted).
func Wrap(ln net.Listener, opts Options, m *Metrics) *Listener {
	if opts.Max == 0 {
		opts.Max = DefaultMax
	}
	if opts.PerAddress == 0 {
		opts.PerAddress = DefaultPerAddress
	}
	if opts.PerNetwork == 0 {
		opts.PerNetwork = DefaultPerNetwork
	}
	return &Listener{Listener: ln, opts: opts, m: m, byAdr: map[netip.Addr]int{}, byNet: map[netip.Prefix]int{},
		floodSize: floodSize, settle: time.Second, afterFlood: collect}
}

// Accept returns the next connection within the limits; those past a
// limit are closed and counted, and Accept waits for the next.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		nc := &conn{Conn: c, l: l}
		nc.addr = peer(c)
		if nc.addr.IsValid() && !l.exempt(nc.addr) {
			nc.limited = true
			nc.network = network(nc.addr)
		}
		reason, victim := l.take(nc)
		if victim != nil {
			// Its slot is already nc's; the server's goroutine for it
			// sees the close and ends.
			_ = victim.Conn.Close()
			if l.m != nil {
				l.m.Evicted.Inc()
			}
		}
		if reason != "" {
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
		return nc, nil
	}
}

// ConnState is http.Server's ConnState hook: a connection is idle from
// its accept until its first request and between requests (keep-alive),
// and busy while a request is in flight.
func (l *Listener) ConnState(c net.Conn, s http.ConnState) {
	nc, ok := c.(*conn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if nc.released {
		return
	}
	switch s {
	case http.StateNew, http.StateIdle:
		l.idle.remove(nc)
		l.idle.push(nc)
	default: // active, hijacked, closed
		l.idle.remove(nc)
	}
	l.countIdle()
}

func (l *Listener) countIdle() {
	if l.m != nil {
		l.m.Idle.Set(float64(l.idle.n))
	}
}

// take counts nc, or says which limit refuses it. At the total it frees
// the slot of the connection idle longest and returns that connection,
// for the caller to close outside the lock.
func (l *Listener) take(nc *conn) (reason string, victim *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if nc.limited {
		if l.opts.PerAddress > 0 && l.byAdr[nc.addr] >= l.opts.PerAddress {
			return ReasonAddress, nil
		}
		if l.opts.PerNetwork > 0 && l.byNet[nc.network] >= l.opts.PerNetwork {
			return ReasonNetwork, nil
		}
	}
	if l.opts.Max > 0 && l.open >= l.opts.Max {
		if victim = l.idle.head; victim == nil {
			return ReasonTotal, nil
		}
		l.releaseLocked(victim)
	}
	if nc.limited {
		l.byAdr[nc.addr]++
		l.byNet[nc.network]++
	}
	l.open++
	l.peak = max(l.peak, l.open)
	if l.m != nil {
		l.m.Open.Inc()
	}
	return "", victim
}

func (l *Listener) release(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked(c)
}

// releaseLocked gives c's slot back, once however often it is called.
func (l *Listener) releaseLocked(c *conn) {
	if c.released {
		return
	}
	c.released = true
	l.idle.remove(c)
	l.open--
	if c.limited {
		decr(l.byAdr, c.addr)
		decr(l.byNet, c.network)
	}
	if l.m != nil {
		l.m.Open.Dec()
	}
	l.countIdle()
	if l.peak >= l.floodSize && l.open <= l.peak/10 {
		l.peak = l.open
		// A second on, the flood's last connections have closed too.
		time.AfterFunc(l.settle, l.afterFlood)
	}
}

// floodSize is how many connections open at once make a flood: more than
// a replica's clients hold in normal operation. A flood has ended when
// nine in ten of them have closed.
const floodSize = 1000

// collect collects what thousands of closed connections leave: each
// held a goroutine stack and net/http's read and write buffers (about
// 16 KB live); when they close, the stacks wait in the runtime's stack
// pool and the buffers in net/http's sync.Pools until a collection, and
// the heap goal the flood set means none comes for minutes (the forced
// one runs every 2 minutes) — so the replica would keep the flood's
// memory. Two collections empty the pools (a pool's items survive one);
// the runtime's background scavenger then returns the pages.
func collect() {
	runtime.GC()
	runtime.GC()
}

// decr counts one fewer for k, dropping k at zero so that the map holds
// only what is open.
func decr[K comparable](m map[K]int, k K) {
	if n := m[k]; n <= 1 {
		delete(m, k)
	} else {
		m[k] = n - 1
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

// Idle is the number of connections with no request in flight.
func (l *Listener) Idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.n
}

func peer(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	return netip.Addr{}
}

// network is the /24 (IPv4) or /64 (IPv6) that holds addr.
func network(addr netip.Addr) netip.Prefix {
	bits := networkBits6
	if addr.Is4() {
		bits = networkBits4
	}
	p, _ := addr.Prefix(bits)
	return p
}

// conn gives its slot back once, however often it is closed or evicted.
type conn struct {
	net.Conn
	l       *Listener
	addr    netip.Addr
	network netip.Prefix
	limited bool // counted per address and network (not a trusted proxy)

	// Guarded by l.mu.
	released   bool
	prev, next *conn
	inIdle     bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.release(c)
	return err
}

// idleList is a doubly linked list of conns, oldest first: pushing,
// removing and taking the oldest are O(1) at any number of connections.
type idleList struct {
	head, tail *conn
	n          int
}

func (q *idleList) push(c *conn) {
	c.prev, c.next, c.inIdle = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
	q.n++
}

func (q *idleList) remove(c *conn) {
	if !c.inIdle {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next, c.inIdle = nil, nil, false
	q.n--
}
