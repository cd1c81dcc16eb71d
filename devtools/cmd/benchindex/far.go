package main

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// farProxy stands between its clients and a registry on loopback and holds
// every response for rtt, as a registry across the internet would (Docker
// Hub answers in 50-150 ms). It counts requests per second so the bench can
// show the indexer kept within its rate limit.
type farProxy struct {
	Host string
	rtt  time.Duration
	hs   *http.Server

	mu      sync.Mutex
	second  int64 // unix second being counted
	inSec   int
	peakSec int
	total   int
}

func startFarProxy(registry string, rtt time.Duration) (*farProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &farProxy{Host: ln.Addr().String(), rtt: rtt}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: registry})
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256}
	p.hs = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.count()
		// The registry's answer is held for one round trip; the request
		// itself goes through at once, so a client that pipelines (many
		// requests in flight) pays the round trip once per batch, as it
		// would against a far registry.
		time.Sleep(p.rtt)
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.hs.Serve(ln) }()
	return p, nil
}

func (p *farProxy) count() {
	now := time.Now().Unix()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total++
	if now != p.second {
		p.second, p.inSec = now, 0
	}
	p.inSec++
	p.peakSec = max(p.peakSec, p.inSec)
}

// peak is the most requests seen in one calendar second, and the total.
func (p *farProxy) peak() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peakSec, p.total
}

func (p *farProxy) Close() { _ = p.hs.Close() }
