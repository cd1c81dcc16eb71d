package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/devtools/benchkit"
	"github.com/tidemark-dev/tidemark/internal/config"
)

// manyOpts is the many-address mode: addresses source addresses, one per
// /24 (127.N.0.2) so that only max_connections binds, each holding per
// idle keep-alive connections (one request each, then silence) and
// reopening each one reopen after the replica closes it, as an attacker
// would; hold once all are open; after is how long after the flood the
// replica's RSS is read again.
type manyOpts struct {
	addresses, per      int
	hold, after, reopen time.Duration
	container           int64
}

// sourceAddr is the i-th flood address (from 0).
func sourceAddr(i int) string { return fmt.Sprintf("127.%d.0.2", i+1) }

func runMany(o manyOpts) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, err := startReplica(self, false, o.container)
	if err != nil {
		return err
	}
	defer r.stop()
	pid, base := r.cmd.Process.Pid, r.base
	hostport := strings.TrimPrefix(base, "http://")
	other := newProbe(base, false)
	for range 20 { // warm: the first requests allocate what every later one reuses
		other.get("/v1-release/channels/stable", http.StatusFound)
	}
	time.Sleep(time.Second)
	rss0 := benchkit.RSS(pid)
	total := o.addresses * o.per
	fmt.Printf("connections, many addresses: %d addresses (127.N.0.2, one /24 each) x %d idle keep-alive connections = %d, reopened %s after a close, held %s; a new connection from 127.0.0.1 asks a channel URL every 10 ms; limits as shipped (%d total, %d per address, %d per network, idle %s); %d cores, loopback\n",
		o.addresses, o.per, total, o.reopen, o.hold, config.DefaultMaxConnections, config.DefaultMaxConnectionsPerAddress,
		config.DefaultMaxConnectionsPerNetwork, config.DefaultIdleTimeout, numCPU())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { other.every(10*time.Millisecond, stop) })

	// Flooder processes of at most floodPer connections each (a process's
	// open files are limited).
	start := time.Now()
	perProc := max(1, floodPer/o.per)
	var flooders []*exec.Cmd
	var fins []io.WriteCloser
	var opened, failed int64
	for first := 0; first < o.addresses; first += perProc {
		var from []string
		for i := first; i < min(o.addresses, first+perProc); i++ {
			from = append(from, sourceAddr(i))
		}
		f, fin, op, fa, err := startFlooder(self, "-floodfrom", strings.Join(from, ","), "-per", strconv.Itoa(o.per), "-reopen", o.reopen.String(), "-to", hostport)
		if err != nil {
			return err
		}
		flooders, fins = append(flooders, f), append(fins, fin)
		opened, failed = opened+op, failed+fa
	}
	openedIn := time.Since(start)
	time.Sleep(o.hold / 2)
	// /metrics and /readyz, each on a new connection, while the flood holds.
	ops := newProbe(base, false)
	metricsOK := ops.get("/metrics", http.StatusOK)
	readyOK := ops.get("/readyz", http.StatusOK)
	time.Sleep(o.hold - o.hold/2)
	metrics := endFlood(stop, &wg, base, flooders, fins)
	ended := time.Now()
	peak, rssEnd := benchkit.PeakRSS(pid), benchkit.RSS(pid)
	time.Sleep(time.Until(ended.Add(o.after)))
	rssAfter := benchkit.RSS(pid)
	after := benchkit.Scrape(base)

	lat := other.latencies()
	p50, p99 := pct(lat, 50), pct(lat, 99)
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
	fmt.Printf("%-34s %d of %d in %s (%d dial errors)\n", "flood connections opened", opened, total, openedIn.Round(time.Millisecond), failed)
	fmt.Printf("%-34s %s evicted; refused %s total, %s address, %s network\n", "at the limit", metricOr(metrics, "tidemark_connections_evicted_total"),
		refused(metrics, "total"), refused(metrics, "address"), refused(metrics, "network"))
	fmt.Printf("%-34s %d answered, %d failed, p50 %s, p99 %s\n", "other address (new connection/10 ms)", len(lat), other.failed.Load(), ms(p50), ms(p99))
	fmt.Printf("%-34s %s (%s), %s (%s)\n", "during the flood", "/metrics", okWord(metricsOK), "/readyz", okWord(readyOK))
	fmt.Printf("%-34s start %s, peak %s, when the flood ended %s, %s later %s (%s open)\n", "replica RSS", mb(rss0), mb(peak), mb(rssEnd),
		o.after, mb(rssAfter), metricOr(after, "tidemark_connections_open"))
	var missed []string
	if p99 >= 100*time.Millisecond || len(lat) == 0 {
		missed = append(missed, fmt.Sprintf("p99 %s >= 100 ms", ms(p99)))
	}
	if n := other.failed.Load(); n > 0 {
		missed = append(missed, fmt.Sprintf("%d requests from the other address failed", n))
	}
	if !metricsOK || !readyOK {
		missed = append(missed, "/metrics or /readyz did not answer during the flood")
	}
	if peak >= 250e6 {
		missed = append(missed, fmt.Sprintf("peak RSS %s >= 250 MB", mb(peak)))
	}
	if float64(rssAfter) > 1.2*float64(rss0) {
		missed = append(missed, fmt.Sprintf("RSS %s after the flood is more than 20 %% above its start %s", mb(rssAfter), mb(rss0)))
	}
	if len(missed) > 0 {
		fmt.Printf("GOAL MISSED: %s\n", strings.Join(missed, "; "))
		return errors.New("goal missed")
	}
	fmt.Println("goals met: p99 < 100 ms, /metrics and /readyz answer, peak RSS < 250 MB, RSS within 20 % of its start after the flood")
	return nil
}

func okWord(ok bool) string {
	if ok {
		return "answered"
	}
	return "NOT answered"
}

func metricOr(metrics, series string) string {
	if v, ok := benchkit.Metric(metrics, series); ok {
		return v
	}
	return "?"
}

// probe asks the replica from 127.0.0.1, on one keep-alive connection or
// on a new connection a request (then the admission of a new connection
// at the limit is what is measured).
type probe struct {
	base   string
	c      *http.Client
	mu     sync.Mutex
	lat    []time.Duration
	failed atomic.Int64
}

func newProbe(base string, keepAlive bool) *probe {
	tr := &http.Transport{DisableKeepAlives: !keepAlive,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}).DialContext}
	return &probe{base: base, c: &http.Client{Transport: tr, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// get asks path once and says whether it was answered with want.
func (p *probe) get(path string, want int) bool {
	start := time.Now()
	res, err := p.c.Get(p.base + path)
	if err != nil {
		p.failed.Add(1)
		return false
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != want {
		p.failed.Add(1)
		return false
	}
	p.mu.Lock()
	p.lat = append(p.lat, time.Since(start))
	p.mu.Unlock()
	return true
}

// every asks the channel URL every d until stop closes, counting afresh.
func (p *probe) every(d time.Duration, stop <-chan struct{}) {
	p.mu.Lock()
	p.lat = nil
	p.mu.Unlock()
	p.failed.Store(0)
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		p.get("/v1-release/channels/stable", http.StatusFound)
	}
}

func (p *probe) latencies() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := slices.Clone(p.lat)
	slices.Sort(out)
	return out
}

// floodFrom holds per keep-alive connections from each address in from
// to hostport: each sends one request, reads the answer and waits; when
// the replica closes it, it is reopened after reopen. It prints how many
// of the first openings succeeded and failed, and runs until stdin closes.
func floodFrom(ctx context.Context, from []string, per int, reopen time.Duration, hostport string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, 16)
	var first sync.WaitGroup
	var opened, failed atomic.Int64
	var conns sync.WaitGroup
	for _, addr := range from {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 5 * time.Second}
		for range per {
			first.Add(1)
			conns.Go(func() {
				counted := false
				count := func(ok bool) { // the first opening only
					if counted {
						return
					}
					counted = true
					if ok {
						opened.Add(1)
					} else {
						failed.Add(1)
					}
					first.Done()
				}
				defer count(false)
				for ctx.Err() == nil {
					sem <- struct{}{}
					c, err := d.DialContext(ctx, "tcp", hostport)
					if err == nil {
						if err = askOnce(c, hostport); err != nil {
							c.Close()
						}
					}
					<-sem
					count(err == nil)
					if err == nil {
						stopped := context.AfterFunc(ctx, func() { c.Close() })
						_, _ = io.Copy(io.Discard, c) // until the replica closes it
						stopped()
						c.Close()
					}
					select {
					case <-ctx.Done():
					case <-time.After(reopen):
					}
				}
			})
		}
	}
	first.Wait()
	fmt.Println(opened.Load(), failed.Load())
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	conns.Wait()
	return nil
}

// askOnce sends one keep-alive request on c and reads its answer.
func askOnce(c net.Conn, hostport string) error {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", hostport); err != nil {
		return err
	}
	res, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return res.Body.Close()
}
